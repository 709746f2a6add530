import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { startSandbox, type RunningSandbox } from '../sandbox/server';
import { partOf } from '../shared/config';
import { LocalFileSecretStore } from '../shared/secrets';
import { SYNC_SETTINGS } from '../shared/sync/settings';
import { intOption, parse, UsageError } from './args';
import { extraCaBundle, startAzurite, type RunningAzurite } from './azurite';
import { cliConfig, DEV_STACK_SETTINGS, pidAlive } from './context';

/**
 * The stack's demo secret has a name of its own, so a standalone `sandbox` (which writes the configured
 * name) cannot replace the secret the running app reads.
 */
export const DEV_STACK_SECRET_NAME = 'local-stack-client-secret';

const HOST_MAIN = resolve(__dirname, '..', 'devhost', 'main.js');

/** One `dev` per folder: a second one is told where the first is, not given a port clash. */
async function takeLock(path: string): Promise<() => Promise<void>> {
  try {
    const held = JSON.parse(await readFile(path, 'utf8')) as { pid: number; apiBaseUrl?: string };
    if (pidAlive(held.pid) && held.pid !== process.pid) {
      throw new UsageError(
        `the local stack is already running (pid ${held.pid}${held.apiBaseUrl ? `, ${held.apiBaseUrl}` : ''}). Stop it with Ctrl-C there first.`,
      );
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, JSON.stringify({ pid: process.pid }), { mode: 0o600 });
  return () => rm(path, { force: true });
}

function portFree(port: number): Promise<boolean> {
  if (port === 0) return Promise.resolve(true);
  return new Promise((done) => {
    const s = createServer();
    s.once('error', () => done(false));
    s.listen(port, '127.0.0.1', () => s.close(() => done(true)));
  });
}

// On Windows, Core Tools installed from npm is `func.cmd`, which only a shell starts (and `where` finds it).
const windows = process.platform === 'win32';
const onPath = (cmd: string) =>
  (windows
    ? spawnSync('where', [cmd], { stdio: 'ignore' })
    : spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' })
  ).status === 0;

interface HostLine {
  url: string;
  functions: string[];
}

function startHost(env: NodeJS.ProcessEnv, port: number): { child: ChildProcess; ready: Promise<HostLine> } {
  const child = spawn(process.execPath, [HOST_MAIN, '--port', String(port)], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise<HostLine>((done, fail) => {
    let buf = '';
    child.stdout?.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) done(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
    });
    child.once('exit', (code) =>
      fail(new Error(`the functions host exited with ${code} (see the messages above)`)),
    );
  });
  return { child, ready };
}

/** `npm start`: Azurite + sandbox + the functions app; one banner (or one JSON line); Ctrl-C stops all. */
export async function devCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { port: { type: 'string' }, json: { type: 'boolean' } });
  const port = intOption('port', values.port, 0, 65_535) ?? 7071;
  const config = cliConfig();
  const release = await takeLock(join(dirname(config.localSecretsFile), 'dev.lock'));
  let azurite: RunningAzurite | undefined;
  let sandbox: RunningSandbox | undefined;
  let host: ChildProcess | undefined;
  const stopAll = async () => {
    if (host && host.exitCode === null) {
      const exited = new Promise((r) => host?.once('exit', r));
      host.kill('SIGTERM');
      await exited;
    }
    await Promise.all([azurite?.stop(), sandbox?.close()]);
    await release();
  };
  try {
    if (!(await portFree(port)))
      throw new UsageError(`port ${port} is in use by another program: choose another with --port`);
    // Azurite over HTTPS with OAuth: export download links are user-delegation SAS, as in Azure.
    const azuriteDir = join(dirname(config.localSecretsFile), 'azurite');
    [azurite, sandbox] = await Promise.all([startAzurite({ tls: { dir: azuriteDir } }), startSandbox({})]);
    await new LocalFileSecretStore(config.localSecretsFile).set(DEV_STACK_SECRET_NAME, sandbox.clientSecret);
    const keys = {
      master: randomBytes(24).toString('base64url'),
      function: randomBytes(24).toString('base64url'),
    };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TENANT_NAME: sandbox.tenant,
      TENANT_BASE_URL: sandbox.baseUrl,
      TENANT_AUTH_URL: sandbox.authUrl,
      TENANT_CLIENT_ID: sandbox.clientId,
      TENANT_CLIENT_SECRET_NAME: DEV_STACK_SECRET_NAME,
      LOCAL_SECRETS_FILE: config.localSecretsFile,
      AzureWebJobsStorage: azurite.connectionString,
      NODE_EXTRA_CA_CERTS: azurite.caFile && extraCaBundle(azurite.caFile),
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      SYNC_SCHEDULE: partOf(config, SYNC_SETTINGS).schedule,
      HOST_MASTER_KEY: keys.master,
      HOST_FUNCTION_KEY: keys.function,
    };
    let apiBaseUrl: string;
    let functions: string[] | undefined;
    if (onPath('func') && port !== 0) {
      // Core Tools present: the real host. Keys are then func's own (see `func keys list`).
      host = spawn('func', ['start', '--port', String(port)], { env, stdio: 'inherit', shell: windows });
      apiBaseUrl = `http://127.0.0.1:${port}/api`;
    } else {
      const started = startHost(env, port);
      host = started.child;
      const line = await started.ready;
      apiBaseUrl = `${line.url}/api`;
      functions = line.functions;
    }
    // Only routes that exist make it into the banner.
    const has = (name: string) => !functions || functions.includes(name);
    // Other commands (login, sync) find the running stack here and use its tenant and storage.
    const settings = Object.fromEntries(DEV_STACK_SETTINGS.map((k) => [k, String(env[k])]));
    await writeFile(
      join(dirname(config.localSecretsFile), 'dev.lock'),
      JSON.stringify({ pid: process.pid, apiBaseUrl, caFile: azurite.caFile, settings }),
      { mode: 0o600 },
    );
    const sandboxLine = {
      baseUrl: sandbox.baseUrl,
      authUrl: sandbox.authUrl,
      tenant: sandbox.tenant,
      adminUsername: sandbox.adminUsername,
      clientId: sandbox.clientId,
      clientSecret: sandbox.clientSecret,
    };
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ apiBaseUrl, functionKey: keys.function, adminKey: keys.master, sandbox: sandboxLine })}\n`,
      );
    } else {
      process.stdout.write(
        [
          '',
          'tenant-integrations — local stack is up (Ctrl-C stops everything)',
          '',
          `  health            ${apiBaseUrl}/health`,
          ...(has('managePage') ? [`  admin page        ${apiBaseUrl}/manage?code=${keys.master}`] : []),
          ...(has('manageStatus')
            ? [`  status page       ${apiBaseUrl}/manage/status?code=${keys.master}`]
            : []),
          ...(has('exportsCreate')
            ? [`  export webhook    POST ${apiBaseUrl}/exports   (header x-functions-key: ${keys.function})`]
            : []),
          `  sandbox portal    ${sandbox.baseUrl}/${sandbox.tenant}/   (log in: admin / sandbox-admin, member / sandbox-member)`,
          `  sandbox GraphQL   ${sandbox.baseUrl}/graphql`,
          `  Azurite           ${azurite.blobUrl}   (HTTPS; its certificate: ${azurite.caFile ?? ''})`,
          '',
        ].join('\n') + '\n',
      );
    }
    await new Promise<void>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
      host?.once('exit', done);
    });
    const hostDied = host.exitCode !== null && host.exitCode !== 0;
    await stopAll();
    return hostDied ? 1 : 0;
  } catch (err) {
    await stopAll();
    throw err;
  }
}
