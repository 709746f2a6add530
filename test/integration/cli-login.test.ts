import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loginCommand, LOGIN_EXIT } from '../../cli/login';
import { OffsetClock } from '../../shared/clock';
import { runCli, startCli } from '../helpers/cli';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(60_000);

let sb: SandboxFixture;
let dir: string;
const saved = { ...process.env };
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb?.close());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ti-login-'));
  await sb.hook('reset');
  // The CLI reads its settings from the environment, as in a shell.
  Object.assign(process.env, sb.settings);
});
afterEach(async () => {
  process.env = { ...saved };
  await rm(dir, { recursive: true, force: true });
});

const sink = (isTTY = false) => {
  let text = '';
  return { isTTY, write: (s: string) => (text += s), text: () => text };
};

/**
 * Runs `login` in this process on a clock the test moves: each wait moves the CLI's clock and the sandbox's
 * together (no real waiting). `onWait(n, code)` runs before the n-th wait returns — a person's action.
 */
async function login(
  options: {
    args?: string[];
    onWait?: (n: number, userCode: string) => Promise<void> | void;
    sandboxLagSeconds?: (n: number) => number;
    abortSignal?: AbortSignal;
    /** A person at a terminal: stderr is a TTY and no --json (the code is read from what it shows). */
    terminal?: boolean;
  } = {},
) {
  const clock = new OffsetClock();
  const stdout = sink();
  const stderr = sink(options.terminal);
  let waits = 0;
  const shownCode = () =>
    options.terminal
      ? (/\n {4}([A-Z]{4}-\d{4})\n/.exec(stderr.text())?.[1] ?? '')
      : (JSON.parse(stdout.text().split('\n')[0]).userCode as string);
  const code = await loginCommand([...(options.terminal ? [] : ['--json']), ...(options.args ?? [])], {
    cwd: dir,
    clock,
    stdout,
    stderr,
    abortSignal: options.abortSignal,
    sleep: async (ms) => {
      waits++;
      await options.onWait?.(waits, shownCode());
      // Whole seconds: the sandbox's clock hook takes integers.
      const seconds = Math.ceil(ms / 1000);
      clock.advanceSeconds(seconds);
      const moved = await sb.advance(seconds - (options.sandboxLagSeconds?.(waits) ?? 0));
      if (moved.status !== 200) throw new Error(`sandbox clock: ${JSON.stringify(moved.body)}`);
    },
  });
  const lines = stdout
    .text()
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return { code, first: lines[0], last: lines[lines.length - 1], stderr: stderr.text(), waits };
}

const secrets = async () =>
  JSON.parse(await readFile(join(dir, '.local', 'secrets.json'), 'utf8')) as Record<string, string>;

describe('tenant-integrations login against the sandbox', () => {
  it('on a terminal: the code, link and QR code; the outcome in words', async () => {
    const r = await login({
      terminal: true,
      onWait: async (n, userCode) => {
        if (n === 1) await sb.hook('device/approve', { userCode, username: 'admin' });
      },
    });
    expect(r.code).toBe(LOGIN_EXIT.authorised);
    expect(r.first).toBeUndefined(); // nothing on stdout without --json
    expect(r.stderr).toMatch(/\n {4}[A-Z]{4}-\d{4}\n/);
    expect(r.stderr).toMatch(/[▀▄█]/); // the QR code, in block characters
    expect(r.stderr).toContain('Signed in as Ada Admin (admin)');
    expect(r.stderr).toContain("the app's keeper keeps it alive");
  });

  it('shows the code and link (no QR code for --json); approval → exit 0, the person named, the refresh token stored and never printed', async () => {
    const r = await login({
      onWait: async (n, userCode) => {
        if (n === 2) await sb.hook('device/approve', { userCode, username: 'admin' });
      },
    });
    expect(r.code).toBe(LOGIN_EXIT.authorised);
    expect(r.first).toMatchObject({ state: 'waiting', userCode: expect.stringMatching(/^[A-Z]{4}-\d{4}$/) });
    expect(r.first.verificationUriComplete).toBe(
      `${sb.authUrl}/realms/${sb.tenant}/device?user_code=${r.first.userCode}`,
    );
    expect(r.last).toEqual({ state: 'authorised', username: 'admin', name: 'Ada Admin' });
    expect(r.stderr).toContain(r.first.verificationUriComplete);
    expect(r.stderr).toContain(`    ${r.first.userCode}\n`);
    expect(r.stderr).not.toMatch(/[▀▄█]/); // a script's stderr gets no QR code
    expect(r.stderr).toContain('Signed in as Ada Admin (admin)');
    expect((await sb.hook('stats')).body.token.device_code).toBe(2);
    const refreshToken = (await secrets())[`delegated-refresh-token-${sb.tenant}`];
    expect(refreshToken).toEqual(expect.any(String));
    // The stored token works: the service accepts it.
    expect((await sb.refresh(refreshToken)).status).toBe(200);
    const sessions = JSON.parse(await readFile(join(dir, '.local', 'sessions.json'), 'utf8'));
    expect(JSON.stringify(sessions)).toContain('"state":"connected"');
    const printed = JSON.stringify(r);
    expect(printed).not.toContain(refreshToken);
    expect(printed).not.toMatch(/eyJ[\w-]{10,}\./);
  });

  it('slow_down: the next checks come 5 s later each time', async () => {
    // The sandbox's clock lags on waits 2 and 3, so those polls come within 5 s of the last accepted one.
    const r = await login({
      args: ['--no-qr'],
      sandboxLagSeconds: (n) => (n === 2 ? 1 : n === 3 ? 10 : 0),
      onWait: async (n, userCode) => {
        if (n === 4) await sb.hook('device/approve', { userCode, username: 'admin' });
      },
    });
    expect(r.code).toBe(LOGIN_EXIT.authorised);
    expect(r.stderr).toContain('checking every 10 s');
    expect(r.stderr).toContain('checking every 15 s');
    expect(r.stderr).not.toMatch(/[▀▄█]/);
  });

  it('denied → exit 3', async () => {
    const r = await login({
      onWait: async (n, userCode) => {
        if (n === 1) await sb.hook('device/deny', { userCode });
      },
    });
    expect(r.code).toBe(LOGIN_EXIT.denied);
    expect(r.last).toEqual({ state: 'denied' });
    expect(r.stderr).toContain('denied');
  });

  it('nobody signs in → expired after expires_in, exit 4', async () => {
    const r = await login();
    expect(r.code).toBe(LOGIN_EXIT.expired);
    expect(r.last).toEqual({ state: 'expired' });
    // Polled every 5 s for 600 s, never after expiry.
    expect((await sb.hook('stats')).body.token.device_code).toBeLessThanOrEqual(120);
  });

  it('any other error stops at once → exit 1 with what went wrong; 5xx keeps polling', async () => {
    await sb.hook('faults', { route: 'token', status: 503, count: 1 });
    await sb.hook('faults', { route: 'token', status: 400, count: 1 });
    const r = await login();
    expect(r.code).toBe(LOGIN_EXIT.failed);
    expect(r.last.state).toBe('failed');
    expect(r.stderr).toContain('invalid_request');
    expect(r.waits).toBe(2);
  });

  it('cancel (Ctrl-C) → exit 130, nothing stored', async () => {
    const abort = new AbortController();
    const r = await login({ abortSignal: abort.signal, onWait: (n) => void (n === 2 && abort.abort()) });
    expect(r.code).toBe(LOGIN_EXIT.cancelled);
    expect(r.last).toEqual({ state: 'cancelled' });
    await expect(secrets()).rejects.toThrow();
  });
});

describe('tenant-integrations login as a process', () => {
  it('a usage mistake is exit 2', async () => {
    const r = await runCli(['login', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bogus');
  });

  it('with no tenant configured: an embedded sandbox, said so; its session is said to end with it; no QR on a redirected stderr', async () => {
    const env = { TENANT_NAME: '', TENANT_BASE_URL: '', TENANT_AUTH_URL: '', TENANT_CLIENT_ID: '' };
    const cli = startCli(['login', '--json'], { cwd: dir, env });
    const first = JSON.parse(await cli.firstLine);
    const base = String(first.verificationUri).replace(/\/auth\/realms\/.*$/, '');
    await fetch(`${base}/_sandbox/device/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userCode: first.userCode, username: 'admin' }),
    });
    const code = await new Promise((done) => cli.child.once('exit', done));
    expect({ code, stderr: cli.stderr() }).toMatchObject({ code: 0 });
    expect(cli.stderr()).toContain('embedded sandbox');
    expect(cli.stderr()).toContain('the embedded sandbox stops now');
    expect(cli.stderr()).not.toContain('keeper keeps it alive');
    expect(cli.stderr()).not.toMatch(/[▀▄█]/);
  });

  it('with no tenant configured it uses an embedded sandbox; SIGINT cancels with exit 130', async () => {
    const env = { TENANT_NAME: '', TENANT_BASE_URL: '', TENANT_AUTH_URL: '', TENANT_CLIENT_ID: '' };
    const cli = startCli(['login', '--json', '--no-qr'], { cwd: dir, env });
    const first = JSON.parse(await cli.firstLine);
    expect(first.verificationUriComplete).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/auth\/realms\/acme\/device\?user_code=/,
    );
    cli.child.kill('SIGINT');
    const code = await new Promise((done) => cli.child.once('exit', done));
    expect(code).toBe(130);
    expect(cli.stderr()).toContain('embedded sandbox');
    expect(cli.stderr()).toContain('Login cancelled');
  });
});
