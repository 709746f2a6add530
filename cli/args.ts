import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A usage mistake: exit code 2 and the message, no stack. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `--port -1` would otherwise read as a flag with no value ("argument is ambiguous"): a value that looks
 * like a negative number is joined to its flag, so the option's own check names what is wrong with it.
 */
function joinNegativeValues(args: string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const flag = args[i].startsWith('--') ? args[i].slice(2) : undefined;
    const next = args[i + 1];
    if (flag && options[flag]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`--${flag}=${next}`);
      i++;
    } else out.push(args[i]);
  }
  return out;
}

/** Node's parser messages, reworded to name the flag and what it needs. */
function usageMessage(err: Error & { code?: string }): string {
  const flag = /'(-{1,2}[\w-]+)/.exec(err.message)?.[1];
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag)
    return /argument missing|ambiguous/.test(err.message)
      ? `${flag} needs a value (write --name=VALUE for a value that starts with a dash)`
      : `${flag} takes no value`;
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag)
    return `unknown option ${flag} (--help lists the options)`;
  if (err.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `${err.message.replace(/^Unexpected argument/, 'unexpected argument')} (--help lists the options)`;
  return err.message;
}

export function parse<T extends Options>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args: joinNegativeValues(args, options), options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError(usageMessage(err as Error & { code?: string }));
  }
}

export function intOption(
  name: string,
  value: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max} (got "${value}")`);
  return n;
}

/** What `--help` shows for one command: its usage line, what it does, and every option. */
export interface CommandHelp {
  usage: string;
  summary: string;
  options: ReadonlyArray<readonly [flag: string, meaning: string]>;
  notes?: string;
}

export function formatHelp(help: CommandHelp): string {
  const width = Math.max(0, ...help.options.map(([flag]) => flag.length));
  return [
    `usage: tenant-integrations ${help.usage}`,
    '',
    help.summary,
    ...(help.options.length
      ? ['', 'options:', ...help.options.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`)]
      : []),
    ...(help.notes ? ['', help.notes] : []),
    '',
  ].join('\n');
}
