import { createSecretStore } from '../shared/secrets';
import { parse, UsageError } from './args';
import { cliConfig } from './context';

export const SECRETS_USAGE = 'secrets set NAME   (reads the value from stdin)';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Paste the value, then press Enter and Ctrl-D:\n');
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
  if (verb !== 'set' || !name || rest.length)
    throw new UsageError(`usage: tenant-integrations ${SECRETS_USAGE}`);
  if (!/^[0-9A-Za-z-]{1,127}$/.test(name))
    throw new UsageError('NAME must be 1-127 letters, digits and dashes (Key Vault rules)');
  const value = await readStdin();
  if (!value) throw new UsageError('no value on stdin: nothing was stored');
  const store = createSecretStore(cliConfig());
  await store.set(name, value);
  process.stderr.write(`Stored secret "${name}" in ${store.description}.\n`);
  return 0;
}
