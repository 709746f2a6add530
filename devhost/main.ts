import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stderrLogger } from '../shared/log';
import { installFunctionsCore, registrations } from './functions-core';

/**
 * `node dist/devhost/main.js [--port N] [--app FILE,…]`: loads the app's functions (package.json `main`
 * glob unless --app is given) and serves them. Storage: AzureWebJobsStorage (Azurite locally). Prints one
 * JSON line when ready; runs until SIGINT/SIGTERM.
 */
function appFiles(root: string, explicit?: string): string[] {
  if (explicit) return explicit.split(',').map((f) => resolve(f));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const main: string = require(join(root, 'package.json')).main;
  const dir = resolve(root, dirname(main));
  const pattern = new RegExp(`^${main.split('/').pop()?.replace(/\./g, '\\.').replace(/\*/g, '.*')}$`);
  return readdirSync(dir)
    .filter((f) => pattern.test(f))
    .sort()
    .map((f) => join(dir, f));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, app: { type: 'string' }, hub: { type: 'string' } },
  });
  const storage = process.env.AzureWebJobsStorage;
  if (!storage)
    throw new Error('AzureWebJobsStorage is not set: the local host keeps durable state in Azurite');
  installFunctionsCore();
  // Loaded only now: @azure/functions must find the stand-in core module on first load.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { LocalHost } = require('./host') as typeof import('./host');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  for (const file of appFiles(resolve(__dirname, '..', '..'), values.app)) require(file);
  const host = new LocalHost({
    port: Number(values.port ?? process.env.FUNCTIONS_HTTPWORKER_PORT ?? 7071),
    storageConnection: storage,
    hub: values.hub ?? process.env.DURABLE_TASK_HUB ?? 'TenantIntegrations',
    keys: {
      master: process.env.HOST_MASTER_KEY,
      function: process.env.HOST_FUNCTION_KEY,
      system: process.env.HOST_SYSTEM_KEY,
    },
    logger: stderrLogger(process.env.HOST_LOG_LEVEL === 'debug' ? 'debug' : 'info'),
    env: process.env,
    queueLatencyMs: Number(process.env.HOST_QUEUE_LATENCY_MS ?? 0) || 0,
  });
  await host.listen();
  process.stdout.write(
    `${JSON.stringify({ url: host.baseUrl, apiBaseUrl: `${host.baseUrl}/api`, masterKey: host.keys.master, functionKey: host.keys.function, functions: [...registrations.keys()] })}\n`,
  );
  const stop = async () => {
    await host.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: Error) => {
  process.stderr.write(`local host: ${err.message}\n`);
  process.exit(1);
});
