import { SINKS } from '../../shared/sinks';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, runCli } from '../helpers/cli';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

/** What a person meets in their first hour with the CLI: help, version, flag mistakes, set-up mistakes. */
jest.setTimeout(60_000);

let dir: string;
let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 30 });
});
afterAll(() => sb?.close());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ti-first-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const noTenant = { TENANT_NAME: '', TENANT_BASE_URL: '', TENANT_AUTH_URL: '', TENANT_CLIENT_ID: '' };
const noStack = (extra: Record<string, string> = {}) => ({
  ...noTenant,
  LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
  ...extra,
});

describe('help and version', () => {
  const options: Record<string, string[]> = {
    dev: ['--port', '--json'],
    sandbox: ['--port', '--host', '--tenant', '--records', '--seed', '--no-m2m'],
    login: ['--no-qr', '--json'],
    sync: ['--streams', '--sink', '--full', '--json'],
    export: ['--streams', '--format', '--gzip', '--out'],
    secrets: ['NAME'],
  };

  it.each(Object.keys(options))('`%s --help` exits 0 with its usage and every option', async (command) => {
    const r = await runCli([command, '--help'], { cwd: dir, env: noStack() });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(new RegExp(`^usage: tenant-integrations ${command}`));
    for (const o of options[command]) expect(r.stdout).toContain(o);
  });

  it('the sync usage names every sink kind', async () => {
    const r = await runCli(['sync', '-h'], { cwd: dir });
    expect(r.stdout.split('\n')[0]).toContain('--sink blob|webhook|postgres|delta[:PATH]|dir:PATH');
    // The help is written by hand: every sink of the registry must be in it.
    for (const { usage } of SINKS) expect(r.stdout.split('\n')[0]).toContain(usage);
  });

  it('`--version` exits 0 with the package version', async () => {
    const pkg = JSON.parse(await readFile(join(__dirname, '../../package.json'), 'utf8'));
    const r = await runCli(['--version'], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`tenant-integrations ${pkg.version}`);
  });

  it('the command list points at per-command help', async () => {
    const r = await runCli(['--help'], { cwd: dir });
    expect(r.code).toBe(0);
    for (const c of Object.keys(options)) expect(r.stdout).toContain(`  ${c}`);
    expect(r.stdout).toContain('--help');
  });
});

describe('flag mistakes name the flag', () => {
  it('`--port -1` says what --port takes, not a parser riddle', async () => {
    const r = await runCli(['sandbox', '--port', '-1'], { cwd: dir, env: noStack() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--port must be a whole number from 0 to 65535 (got "-1")');
    expect(r.stderr).not.toContain('ambiguous');
    expect(r.stderr).toContain('usage: tenant-integrations sandbox');
  });

  it('a flag without its value names the flag', async () => {
    const r = await runCli(['export', '--out'], { cwd: dir, env: noStack() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--out needs a value');
  });

  it('an unknown option is named, with where to look', async () => {
    const r = await runCli(['sync', '--colour'], { cwd: dir, env: noStack() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown option --colour (--help lists the options)');
  });

  it('`--sink s3:foo` is reported against --sink, not the SYNC_SINKS setting', async () => {
    const r = await runCli(['sync', '--sink', 's3:foo'], {
      cwd: dir,
      env: { ...sb.settings, LOCAL_SECRETS_FILE: join(dir, 's.json') },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--sink: unknown sink "s3:foo"; use blob, webhook, postgres, delta[:PATH] or dir:PATH',
    );
    expect(r.stderr).not.toContain('SYNC_SINKS');
  });
});

describe('set-up mistakes are said once', () => {
  it('a missing client secret: one message naming the fix, exit 2, nothing to resume', async () => {
    const env = { ...sb.settings, LOCAL_SECRETS_FILE: join(dir, 'empty.json') };
    const r = await runCli(['sync', '--sink', `dir:${join(dir, 'out')}`], { cwd: dir, env });
    expect(r.code).toBe(2);
    expect(r.stderr.match(/is not in/g)).toHaveLength(1);
    expect(r.stderr).toContain('tenant-integrations secrets set tenant-client-secret');
    expect(r.stderr).not.toContain('resumes');
    // No run was begun, so the next sync has nothing to resume: it starts afresh once the secret is set.
    await runCli(['secrets', 'set', 'tenant-client-secret'], { cwd: dir, env, input: sb.clientSecret });
    const next = await runCli(['sync', '--streams', 'kpis', '--sink', `dir:${join(dir, 'out')}`, '--json'], {
      cwd: dir,
      env,
    });
    expect(next.code).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ resumed: false, ok: true });
  });

  it('a revoked credential: one message, exit 2', async () => {
    const made = (await sb.hook('credentials', { label: 'first-hour' })).body;
    await sb.hook(`credentials/${made.clientId}/revoke`);
    const env = { ...sb.settings, TENANT_CLIENT_ID: made.clientId, LOCAL_SECRETS_FILE: join(dir, 's.json') };
    await runCli(['secrets', 'set', 'tenant-client-secret'], { cwd: dir, env, input: made.clientSecret });
    const r = await runCli(['export', '--out', join(dir, 'x')], { cwd: dir, env });
    expect(r.code).toBe(2);
    expect(r.stderr.match(/rejected M2M credential/g)).toHaveLength(1);
    expect(r.stderr).not.toContain(made.clientSecret);
  });
});

describe('sync in words', () => {
  it('says which tenant it used and where the changes went', async () => {
    const r = await runCli(['sync', '--streams', 'users'], { cwd: dir, env: noStack() });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('using an embedded sandbox');
    expect(r.stderr).toMatch(/Run \S+: changes in folder .*sync-out/);
    expect(r.stderr).toContain('✔ users (full pass): 250 read, 250 created');
  });
});

describe('what a local sync loads', () => {
  it('help loads no dependency at all: not zod, not the settings, not a sink (`bench -- coldstart` prints its RSS)', async () => {
    // It once rose from 44 to 59 MB when the error vocabulary (shared/errors/), which help loads for its exit codes, imported zod.
    const preload = join(dir, 'help-loaded.js');
    const list = join(dir, 'help-loaded.json');
    await writeFile(
      preload,
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify(Object.keys(require.cache))));`,
    );
    for (const args of [['--help'], ['sync', '--help']]) {
      const r = await runCli(args, { cwd: dir, env: { ...noStack(), NODE_OPTIONS: `--require ${preload}` } });
      expect(r.code).toBe(0);
      const loaded = JSON.parse(await readFile(list, 'utf8')) as string[];
      expect([args.join(' '), loaded.filter((f) => f.includes('/node_modules/'))]).toEqual([
        args.join(' '),
        [],
      ]);
    }
  });

  it('a sync with local state and the dir sink loads no Azure SDK (it has no storage to talk to)', async () => {
    // Each SDK loads with its first client; the session store asked for a table client and loaded the Tables
    // SDK (~210 modules) only to learn that none is configured.
    const preload = join(dir, 'loaded.js');
    const list = join(dir, 'loaded.json');
    await writeFile(
      preload,
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify(Object.keys(require.cache))));`,
    );
    const env = {
      ...sb.settings,
      LOCAL_SECRETS_FILE: join(dir, 's.json'),
      AzureWebJobsStorage: '',
      NODE_OPTIONS: `--require ${preload}`,
    };
    await runCli(['secrets', 'set', 'tenant-client-secret'], { cwd: dir, env, input: sb.clientSecret });
    const r = await runCli(['sync', '--streams', 'kpis', '--sink', `dir:${join(dir, 'out')}`], {
      cwd: dir,
      env,
    });
    expect(r.code).toBe(0);
    const loaded = JSON.parse(await readFile(list, 'utf8')) as string[];
    expect(loaded.some((f) => f.includes('/dist/shared/sync/run-steps.js'))).toBe(true); // it did sync
    const sdks = [
      ...new Set(loaded.map((f) => /\/node_modules\/(@azure\/[^/]+)\//.exec(f)?.[1]).filter(Boolean)),
    ];
    expect(sdks).toEqual([]);
  });
});

describe('secrets set on a terminal', () => {
  /** Runs the command on a pseudo-terminal (util-linux `script`) and types into it once it asks. */
  const onTerminal = (name: string, typed: string, env: Record<string, string>) =>
    new Promise<{ code: number | null; screen: string }>((done, fail) => {
      const child = spawn(
        'script',
        ['-qfec', `"${process.execPath}" "${CLI}" secrets set ${name}`, '/dev/null'],
        {
          cwd: dir,
          env: { ...process.env, ...env },
        },
      );
      let screen = '';
      let typedYet = false;
      child.stdout.on('data', (d) => {
        screen += d;
        // Typed only once it asks, as a person would: before that the terminal itself would echo.
        if (!typedYet && /Enter: $/.test(screen)) {
          typedYet = true;
          child.stdin.write(typed);
        }
      });
      child.on('error', fail);
      child.on('exit', (code) => done({ code, screen }));
    });

  it('reads the value without echoing it, and stores it', async () => {
    const env = noStack();
    const r = await onTerminal('typed-secret', 'hunter2-on-a-tty\r', env);
    expect(r.code).toBe(0);
    expect(r.screen).toContain('Value for "typed-secret" (input hidden)');
    expect(r.screen).not.toContain('hunter2');
    expect(r.screen).toContain('Stored secret "typed-secret"');
    expect(JSON.parse(await readFile(env.LOCAL_SECRETS_FILE, 'utf8'))['typed-secret']).toBe(
      'hunter2-on-a-tty',
    );
  });

  it('Ctrl-C stores nothing', async () => {
    const env = noStack();
    const r = await onTerminal('typed-secret', 'half\u0003', env);
    expect(r.code).toBe(2);
    expect(r.screen).toContain('cancelled: nothing was stored');
    expect(r.screen).not.toContain('half');
    await expect(readFile(env.LOCAL_SECRETS_FILE, 'utf8')).rejects.toThrow();
  });
});
