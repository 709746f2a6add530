import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { RunningSandbox } from '../sandbox/server';
import { extraCaBundle } from './azurite';
import { readLocalSettings, type AppConfig, type TenantSettings } from '../shared/config';
import { loadConfig } from '../shared/app';
import { LocalFileSecretStore } from '../shared/secrets/local-file';

/** The CLI reads the same setting names as the app: environment first, then local.settings.json. */
export function cliConfig(cwd = process.cwd()): AppConfig {
  return loadConfig({ ...readLocalSettings(cwd), ...process.env }, { cwd });
}

/** The settings `dev` shares with other commands through its lock file (no secrets: those are in the store). */
export const DEV_STACK_SETTINGS = [
  'TENANT_NAME',
  'TENANT_BASE_URL',
  'TENANT_AUTH_URL',
  'TENANT_CLIENT_ID',
  'TENANT_CLIENT_SECRET_NAME',
  'AzureWebJobsStorage',
] as const;

const devLockSchema = z.object({
  pid: z.number().int(),
  apiBaseUrl: z.string().optional(),
  /** The certificate of the stack's Azurite (HTTPS), for clients to trust. */
  caFile: z.string().optional(),
  settings: z.record(z.enum(DEV_STACK_SETTINGS), z.string()).optional(),
});

/** Whether a process with this id is running (signal 0 only checks). */
export const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The running `dev` stack of this folder, if any. */
export async function runningDevStack(config: AppConfig) {
  try {
    const lock = devLockSchema.parse(
      JSON.parse(await readFile(join(dirname(config.localSecretsFile), 'dev.lock'), 'utf8')),
    );
    return lock.settings && pidAlive(lock.pid) ? { ...lock, settings: lock.settings } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The certificate file (a bundle with any the environment already names) a command must trust to reach the running stack's Azurite, or undefined. Read before
 * anything else runs: Node takes extra CAs (NODE_EXTRA_CA_CERTS) only at start-up, so the launcher re-runs
 * the command with it set.
 */
export function devStackCaFile(cwd = process.cwd()): string | undefined {
  try {
    const config = cliConfig(cwd);
    if (config.tenant) return undefined;
    const lock = devLockSchema.parse(
      JSON.parse(readFileSync(join(dirname(config.localSecretsFile), 'dev.lock'), 'utf8')),
    );
    return lock.settings && lock.caFile && pidAlive(lock.pid) ? extraCaBundle(lock.caFile) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Which tenant a command talks to: the configured one; else the running `npm start` stack's sandbox;
 * else (the embedded default) a sandbox started for this command alone, stopped by `close`.
 */
export async function resolveTenant(
  cwd = process.cwd(),
  options: {
    /** Thrown instead of starting an embedded sandbox, for a command that cannot work with one. */
    refuseEmbedded?: () => Error;
  } = {},
): Promise<{
  config: AppConfig & { tenant: TenantSettings };
  source: 'configured' | 'dev-stack' | 'embedded';
  sandbox?: RunningSandbox;
  close: () => Promise<void>;
}> {
  const config = cliConfig(cwd);
  if (config.tenant)
    return { config: { ...config, tenant: config.tenant }, source: 'configured', close: async () => {} };
  const dev = await runningDevStack(config);
  if (dev) {
    const merged = loadConfig({ ...readLocalSettings(cwd), ...process.env, ...dev.settings }, { cwd });
    if (merged.tenant)
      return { config: { ...merged, tenant: merged.tenant }, source: 'dev-stack', close: async () => {} };
  }
  if (options.refuseEmbedded) throw options.refuseEmbedded();
  // Loaded only here: the sandbox's GraphQL server is heavy for commands that do not need it.
  const { startSandbox } = await import('../sandbox/server');
  const sandbox = await startSandbox({});
  // Its demo secret goes to the secret file under a name of its own: the configured name may hold the
  // secret of a sandbox or tenant someone else is using.
  const clientSecretName = 'embedded-sandbox-client-secret';
  await new LocalFileSecretStore(config.localSecretsFile).set(clientSecretName, sandbox.clientSecret);
  const tenant: TenantSettings = {
    name: sandbox.tenant,
    baseUrl: sandbox.baseUrl,
    authUrl: sandbox.authUrl,
    clientId: sandbox.clientId,
  };
  return {
    config: { ...config, tenant, clientSecretName },
    source: 'embedded',
    sandbox,
    close: () => sandbox.close(),
  };
}

/** One line on stderr saying which tenant a command talks to, when it is not a configured one. */
export function describeTarget(
  target: { source: 'configured' | 'dev-stack' | 'embedded'; config: { tenant: TenantSettings } },
  out: { write(s: string): unknown } = process.stderr,
): void {
  if (target.source === 'embedded')
    out.write(
      'No tenant is configured and no local stack is running: using an embedded sandbox, which stops when\n' +
        'this command ends. Run `npm start` for a lasting one, or set TENANT_* for a real tenant.\n\n',
    );
  else if (target.source === 'dev-stack')
    out.write(`Using the sandbox of the running local stack (tenant ${target.config.tenant.name}).\n\n`);
}
