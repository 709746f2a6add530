import { createSecretStore } from '../shared/secrets';
import { parse, UsageError } from './args';
import { cliConfig } from './context';

type TtyIn = NodeJS.ReadStream & { setRawMode(mode: boolean): unknown };

/** One line from a terminal with echo off (raw mode): Enter ends it, Ctrl-C or Ctrl-D on an empty line cancels. */
export function readHidden(
  input: TtyIn,
  prompt: { write(s: string): unknown },
  label: string,
): Promise<string> {
  // Echo off before the prompt shows: whatever is typed once it is visible is never echoed.
  input.setRawMode(true);
  prompt.write(`${label} (input hidden), then Enter: `);
  input.resume();
  return new Promise((done, fail) => {
    let value = '';
    const end = (err?: Error) => {
      input.removeListener('data', onData);
      input.setRawMode(false);
      input.pause();
      prompt.write('\n');
      if (err) fail(err);
      else done(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return end();
        if (ch === '\u0003') return end(new UsageError('cancelled: nothing was stored'));
        if (ch === '\u0004') {
          if (!value) return end(new UsageError('cancelled: nothing was stored'));
          return end();
        }
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    input.on('data', onData);
  });
}

async function readPiped(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** `secrets set NAME`: stdin → the secret store in use (Key Vault, or the local file). Never echoes it. */
export async function secretsCommand(args: string[]): Promise<number> {
  const { positionals } = parse(args, {}, true);
  const [verb, name, ...rest] = positionals;
  if (verb !== 'set' || !name || rest.length) throw new UsageError('expected `secrets set NAME`');
  if (!/^[0-9A-Za-z-]{1,127}$/.test(name))
    throw new UsageError('NAME must be 1-127 letters, digits and dashes (Key Vault rules)');
  // Validated before the prompt: a bad setting should not cost the person a typed secret.
  const store = createSecretStore(cliConfig());
  const value = process.stdin.isTTY
    ? await readHidden(process.stdin as TtyIn, process.stderr, `Value for "${name}"`)
    : await readPiped();
  if (!value) throw new UsageError('no value given: nothing was stored');
  await store.set(name, value);
  process.stderr.write(`Stored secret "${name}" in ${store.description} (${value.length} characters).\n`);
  return 0;
}
