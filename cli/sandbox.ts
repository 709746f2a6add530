import { parseLimits } from '../sandbox/limits';
import { startSandbox } from '../sandbox/server';
import { LocalFileSecretStore } from '../shared/secrets';
import { intOption, parse, UsageError } from './args';
import { cliConfig, runningDevStack } from './context';

/** Starts the sandbox; when ready prints one JSON line (docs/sandbox.md) and runs until SIGINT/SIGTERM. */
export async function sandboxCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    port: { type: 'string' },
    host: { type: 'string' },
    tenant: { type: 'string' },
    records: { type: 'string' },
    seed: { type: 'string' },
    'no-m2m': { type: 'boolean' },
    schema: { type: 'string' },
    'no-introspection': { type: 'boolean' },
    limits: { type: 'string' },
  });
  const config = cliConfig();
  let limits;
  try {
    limits = values.limits === undefined ? undefined : parseLimits(values.limits);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  let running;
  try {
    running = await startSandbox({
      port: intOption('port', values.port, 0, 65_535),
      host: values.host,
      tenant: values.tenant,
      records: intOption('records', values.records, 0, 10_000_000),
      seed: values.seed,
      m2mEnabled: !values['no-m2m'],
      schema: values.schema as 'default' | 'varied' | 'odd' | undefined,
      introspection: !values['no-introspection'],
      limits,
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE')
      throw new UsageError(
        `port ${values.port} is in use: choose another with --port, or leave it out for a free one`,
      );
    if (e.name === 'ZodError') throw new UsageError(`invalid option: ${(e as Error).message}`);
    throw err;
  }
  // The demo secret goes to the development secret file, where the app's secret store finds it. A running
  // stack reads its own secret name (dev.ts), so this never replaces the secret the stack is using.
  await new LocalFileSecretStore(config.localSecretsFile).set(config.clientSecretName, running.clientSecret);
  const stack = await runningDevStack(config);
  process.stderr.write(
    `Stored the demo credential's secret as "${config.clientSecretName}" in ${config.localSecretsFile}.\n` +
      (stack
        ? `The running local stack (pid ${stack.pid}) keeps its own sandbox and secret; it is not affected.\n`
        : ''),
  );
  const line = {
    baseUrl: running.baseUrl,
    authUrl: running.authUrl,
    tenant: running.tenant,
    adminUsername: running.adminUsername,
    clientId: running.clientId,
    clientSecret: running.clientSecret,
    portalUrl: `${running.baseUrl}/${running.tenant}/`,
    secretFile: config.localSecretsFile,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await running.close();
  return 0;
}
