/** An error's first line, for a finding. */
export const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];
