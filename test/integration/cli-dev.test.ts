import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, startCli } from '../helpers/cli';
import { eventually } from '../helpers/host';

jest.setTimeout(60_000);

describe('tenant-integrations dev (npm start)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ti-dev-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('brings up sandbox + Azurite + the app; its URLs answer; a second one is refused; Ctrl-C stops all', async () => {
    const env = { LOCAL_SECRETS_FILE: join(dir, 'secrets.json') };
    const dev = startCli(['dev', '--port', '0', '--json'], { env, timeoutMs: 45_000 });
    let exitCode: number | null = null;
    try {
      const line = JSON.parse(await dev.firstLine);
      expect(line.apiBaseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
      expect(line.functionKey).toEqual(expect.any(String));
      expect(line.adminKey).toEqual(expect.any(String));
      expect(line.sandbox).toMatchObject({ tenant: 'acme', adminUsername: 'admin', clientId: 'demo-sync' });
      const health = await (await fetch(`${line.apiBaseUrl}/health`)).json();
      expect(health).toEqual({ status: 'ok' }); // anonymous: the status alone
      const details = await (
        await fetch(`${line.apiBaseUrl}/manage/health`, { headers: { 'x-functions-key': line.adminKey } })
      ).json();
      expect(details).toMatchObject({ status: 'ok', tenant: 'acme', tenantConfigured: true });
      expect((await fetch(`${line.sandbox.baseUrl}/acme/`)).status).toBe(200);
      // The app reaches the sandbox with the secret from the development secret file.
      const token = await fetch(`${line.sandbox.authUrl}/realms/acme/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: 'demo-sync',
          client_secret: line.sandbox.clientSecret,
        }),
      });
      expect(token.status).toBe(200);

      // `login` finds the running stack: the session it stores is the app's (one real 5 s poll interval).
      const login = startCli(['login', '--json', '--no-qr'], { env, cwd: dir });
      const waiting = JSON.parse(await login.firstLine);
      expect(waiting.verificationUri).toBe(`${line.sandbox.authUrl}/realms/acme/device`);
      await fetch(`${line.sandbox.baseUrl}/_sandbox/device/approve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userCode: waiting.userCode, username: 'admin' }),
      });
      const loginCode = await new Promise((done) => login.child.once('exit', done));
      expect({ code: loginCode, stderr: login.stderr() }).toMatchObject({ code: 0 });
      expect(login.stderr()).toContain('running local stack');
      const session = await fetch(`${line.apiBaseUrl}/manage/session`, {
        headers: { 'x-functions-key': line.adminKey },
      });
      expect(await session.json()).toMatchObject({ state: 'connected', username: 'admin' });

      // A standalone sandbox started beside the stack (as the README documents) stores its own demo secret
      // and leaves the stack's alone: the stack's sync and exports keep working.
      const standalone = startCli(['sandbox', '--records', '5'], { env, cwd: dir });
      try {
        const other = JSON.parse(await standalone.firstLine);
        expect(other.clientSecret).not.toBe(line.sandbox.clientSecret);
        expect(standalone.stderr()).toContain('keeps its own sandbox and secret; it is not affected');
        // Started with a Node flag of the operator's: the command, run again to trust the stack's certificate,
        // keeps it beside the sync's own flags (a preloaded hook reports each process's).
        const hook = join(dir, 'flags.js');
        await writeFile(
          hook,
          "process.on('exit', () => process.stderr.write('FLAGS ' + JSON.stringify(process.execArgv) + '\\n'));",
        );
        const sync = await runCli(['sync', '--streams', 'kpis', '--json'], {
          env: { ...env, NODE_OPTIONS: `--require ${hook}` },
          cwd: dir,
          nodeArgs: ['--stack-trace-limit=20'],
        });
        expect({ code: sync.code, stderr: sync.stderr }).toMatchObject({ code: 0 });
        expect(JSON.parse(sync.stdout)).toMatchObject({ ok: true, streams: { kpis: { read: 250 } } });
        expect(sync.stderr).toContain(
          `FLAGS ${JSON.stringify(['--stack-trace-limit=20', '--max-semi-space-size=4', '--heap-growing-percent=10'])}`,
        );
        const created = await fetch(`${line.apiBaseUrl}/exports`, {
          method: 'POST',
          headers: { 'x-functions-key': line.functionKey, 'content-type': 'application/json' },
          body: JSON.stringify({ streams: ['kpis'] }),
        });
        expect(created.status).toBe(202);
        const { statusUrl } = (await created.json()) as { statusUrl: string };
        const done = await eventually(async () => {
          const body = (await (
            await fetch(statusUrl, { headers: { 'x-functions-key': line.functionKey } })
          ).json()) as { status: string };
          return ['completed', 'failed'].includes(body.status) && body;
        }, 'the export to end');
        expect(done).toMatchObject({ status: 'completed' });
      } finally {
        await standalone.stop();
      }

      const second = await runCli(['dev', '--port', '0'], { env });
      expect(second.code).toBe(2);
      expect(second.stderr).toContain('already running');
      expect(second.stderr).not.toMatch(/EADDRINUSE|\n\s+at /);
    } finally {
      dev.child.kill('SIGINT');
      exitCode = await dev.stop();
    }
    expect(exitCode).toBe(0);
    expect(await readdir(dir)).not.toContain('dev.lock');
  });
});
