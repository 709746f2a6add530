import { startSandbox } from '../sandbox/server';
import { LocalFileSecretStore } from '../shared/secrets';
import { intOption, parse, UsageError } from './args';
import { cliConfig } from './context';

export const SANDBOX_USAGE = 'sandbox [--port N] [--host H] [--tenant T] [--records N] [--seed S] [--no-m2m]';

/** Starts the sandbox; when ready prints one JSON line (DESIGN §4) and runs until SIGINT/SIGTERM. */
export async function sandboxCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    port: { type: 'string' },
    host: { type: 'string' },
    tenant: { type: 'string' },
    records: { type: 'string' },
    seed: { type: 'string' },
    'no-m2m': { type: 'boolean' },
  });
  const config = cliConfig();
  let running;
  try {
    running = await startSandbox({
      port: intOption('port', values.port, 0, 65_535),
      host: values.host,
      tenant: values.tenant,
      records: intOption('records', values.records, 0, 10_000_000),
      seed: values.seed,
      m2mEnabled: !values['no-m2m'],
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
  // The demo secret goes to the development secret file, where the app's secret store finds it.
  await new LocalFileSecretStore(config.localSecretsFile).set(config.clientSecretName, running.clientSecret);
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
