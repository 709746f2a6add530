import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { resolve } from 'node:path';
import { extraCaBundle, startAzurite, type RunningAzurite } from '../../cli/azurite';

const MAIN = resolve(__dirname, '../../dist/devhost/main.js');
export const FIXTURE_APP = resolve(__dirname, '../fixtures/host-app/index.js');

export interface HostLine {
  url: string;
  apiBaseUrl: string;
  masterKey: string;
  functionKey: string;
  functions: string[];
}

/** The local host as its own process (as `dev` runs it), on a free port, over a given Azurite. */
export function startHostProcess(
  azurite: RunningAzurite,
  options: {
    app?: string;
    env?: Record<string, string>;
    keys?: Partial<Record<'master' | 'function' | 'system', string>>;
  } = {},
) {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [MAIN, '--port', '0', ...(options.app ? ['--app', options.app] : [])],
    {
      env: {
        ...process.env,
        AzureWebJobsStorage: azurite.connectionString,
        // Azurite over HTTPS (the stack's): the host trusts its certificate, as `dev` arranges.
        ...(azurite.caFile ? { NODE_EXTRA_CA_CERTS: extraCaBundle(azurite.caFile) } : {}),
        // A schedule that never comes round in a test; tests that sync trigger the timer themselves.
        SYNC_SCHEDULE: '0 0 0 1 1 *',
        ...(options.keys?.master ? { HOST_MASTER_KEY: options.keys.master } : {}),
        ...(options.keys?.function ? { HOST_FUNCTION_KEY: options.keys.function } : {}),
        ...(options.keys?.system ? { HOST_SYSTEM_KEY: options.keys.system } : {}),
        ...options.env,
      },
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const ready = new Promise<HostLine>((done, fail) => {
    let buf = '';
    const timer = setTimeout(() => fail(new Error(`host did not start: ${stderr}`)), 30_000);
    child.stdout.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) {
        clearTimeout(timer);
        done(JSON.parse(buf.slice(0, buf.indexOf('\n'))));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`host exited with ${code}: ${stderr}`));
    });
  });
  /** SIGTERM lets the host finish; SIGKILL is a crash (what a run must survive). */
  const stop = (signal: NodeJS.Signals = 'SIGTERM') =>
    new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', () => done());
      child.kill(signal);
    });
  return { ready, stop, stderr: () => stderr, child };
}

export async function hostFixture(options: { app?: string; env?: Record<string, string> } = {}) {
  const azurite = await startAzurite();
  let current = startHostProcess(azurite, options);
  let line = await current.ready;
  const keys = { master: line.masterKey, function: line.functionKey, system: 'test-system-key-0123456789' };
  // Restart once with fixed keys so later restarts keep them (as `dev` does).
  await current.stop();
  current = startHostProcess(azurite, { ...options, keys });
  line = await current.ready;
  const api = {
    get line() {
      return line;
    },
    azurite,
    keys,
    fetch: (path: string, init?: RequestInit) => fetch(`${line.url}${path}`, init),
    /** Moves the host clock (durable timers and timer triggers follow it). */
    advance: async (seconds: number) => {
      const res = await fetch(`${line.url}/admin/host/clock?code=${keys.master}`, {
        method: 'POST',
        body: JSON.stringify({ advanceSeconds: seconds }),
      });
      if (res.status !== 200) throw new Error(`clock: ${res.status}`);
    },
    status: async () => (await fetch(`${line.url}/admin/host/status?code=${keys.master}`)).json(),
    restart: async () => {
      await current.stop();
      current = startHostProcess(azurite, { ...options, keys });
      line = await current.ready;
    },
    stderr: () => current.stderr(),
    close: async () => {
      await current.stop();
      await azurite.stop();
    },
  };
  return api;
}

/**
 * Polls until `check` returns a value, for state that settles asynchronously. The bound only stops a hang:
 * it is far above what any wait takes on a loaded two-core machine, so no test depends on machine speed.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 60_000,
  stepMs = 50,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
