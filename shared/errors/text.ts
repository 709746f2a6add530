/**
 * What an error code means: its title, the one action that fixes it, how long a 409 of it asks a client to wait, and
 * whether it is a set-up the operator fixes (its message names the setting, secret or file: a route answers 503).
 */
export interface ErrorText {
  title: string;
  action: string;
  retryAfterSeconds?: number;
  setup?: boolean;
}

/** A set of codes and their texts, as an area of the vocabulary or a feature declares them. */
export type ErrorTable = Readonly<Record<string, ErrorText>>;

/**
 * A text as long as it may be where it is stored or shown: an error message in a run summary, a problem's detail.
 * A hostile or broken upstream can make an error as long as it likes; what the app keeps of it is bounded.
 */
export function bounded(text: string, max = 2_000): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max - 40)}… (${text.length - max + 40} more characters)`;
}
