import { TableClient } from '@azure/data-tables';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { failure } from '../helpers/failure';
import { afterPoll, nextStep, startDeviceFlow, type DeviceFlowState } from '../../shared/device-login/flow';
import { pollDeviceToken, requestDeviceCode } from '../../shared/device-login/idp';
import { tenantEndpoints } from '../../shared/auth/endpoints';
import { LoginRequired } from '../../shared/errors';
import { OffsetClock } from '../../shared/clock';
import { SESSION_TABLE, TableSessionMetadataStore } from '../../shared/state/session-metadata';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { accessFixture } from '../helpers/access';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

jest.setTimeout(30_000);

let sb: SandboxFixture;
let azurite: RunningAzurite;
beforeAll(async () => {
  [sb, azurite] = await Promise.all([sandboxFixture(), startAzurite()]);
});
afterAll(async () => {
  await sb.close();
  await azurite.stop();
});
beforeEach(() => sb.hook('reset'));

describe('the session store on Table storage', () => {
  it('is built when the session is first read: an access layer used for reading only loads no Tables SDK', async () => {
    // A fresh process on the built app (as the CLI and the Functions host load it): which modules it loaded is
    // what node's own module cache says.
    const access = resolve(__dirname, '../../dist/shared/access.js');
    const config = resolve(__dirname, '../../dist/shared/app.js');
    const script = `
      const loaded = () => Object.keys(require.cache).some((f) => f.includes('/@azure/data-tables/'));
      const a = require(${JSON.stringify(access)}).createAccessLayer(
        require(${JSON.stringify(config)}).loadConfig(JSON.parse(process.argv[1])));
      const built = loaded();
      a.delegated.status().then((status) => {
        process.stdout.write(JSON.stringify({ built, read: loaded(), status: status ?? null }));
      });`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-e', script, JSON.stringify({ ...sb.settings, AzureWebJobsStorage: azurite.connectionString })],
      { timeout: 20_000 },
    );
    // Nobody signed in: the table (made on that first read, on Azurite) holds no session.
    expect(JSON.parse(stdout)).toEqual({ built: false, read: true, status: null });
  });
});

describe('delegated session: device flow driven by the shared state machine', () => {
  /** A driver like the CLI's, but time moves with the sandbox clock instead of real waiting. */
  async function drive(
    a: Awaited<ReturnType<typeof accessFixture>>,
    onPoll?: (n: number, userCode: string) => Promise<void>,
  ) {
    const endpoints = tenantEndpoints(a.tenant);
    const code = await requestDeviceCode(endpoints);
    let state: DeviceFlowState = startDeviceFlow(code, a.clock.now());
    const waits: number[] = [];
    let tokens;
    for (;;) {
      const { step, state: s } = nextStep(state, a.clock.now());
      state = s;
      if (step.action === 'stop') return { state, waits, tokens };
      if (step.action === 'wait') {
        const seconds = Math.ceil((step.until - a.clock.now()) / 1000);
        waits.push(seconds);
        await a.advance(seconds);
        continue;
      }
      await onPoll?.(state.polls, code.userCode);
      const result = await pollDeviceToken(endpoints, code.deviceCode);
      tokens = result.tokens ?? tokens;
      state = afterPoll(state, result.outcome, a.clock.now());
    }
  }

  it('pending → approved → tokens; the refresh token goes only to the secret store', async () => {
    const store = new TableSessionMetadataStore(
      TableClient.fromConnectionString(azurite.connectionString, SESSION_TABLE, {
        allowInsecureConnection: true,
      }),
    );
    const a = await accessFixture(sb, { sessionMetadata: store });
    const { state, tokens, waits } = await drive(a, async (n, userCode) => {
      if (n === 2) await sb.hook('device/approve', { userCode, username: 'admin' });
    });
    expect(state).toEqual({ status: 'authorised', polls: 3 });
    expect(waits).toEqual([5, 5, 5]);
    const meta = await a.delegated.connect(tokens!);
    expect(meta).toMatchObject({ username: 'admin', name: 'Ada Admin', state: 'connected' });
    expect(await a.file.get(a.delegated.secretName)).toBe(tokens!.refresh_token);
    // Metadata is in Table storage (Azurite) and holds no token.
    const stored = await store.get(sb.tenant);
    expect(stored).toEqual(meta);
    expect(JSON.stringify(stored)).not.toContain(tokens!.refresh_token);
    expect(JSON.stringify(stored)).not.toContain(tokens!.access_token);
    await a.cleanup();
  });

  it('slow_down raises the interval by 5 s each time', async () => {
    const a = await accessFixture(sb);
    const endpoints = tenantEndpoints(a.tenant);
    const code = await requestDeviceCode(endpoints);
    let state = startDeviceFlow(code, a.clock.now());
    await a.advance(5);
    state = afterPoll(state, (await pollDeviceToken(endpoints, code.deviceCode)).outcome, a.clock.now());
    // Two polls too early on purpose: the sandbox answers slow_down, the interval grows 5 → 10 → 15.
    for (const expected of [10, 15]) {
      await a.advance(1);
      const { outcome } = await pollDeviceToken(endpoints, code.deviceCode);
      expect(outcome).toMatchObject({ kind: 'error', error: 'slow_down' });
      state = afterPoll(state, outcome, a.clock.now());
      expect(state).toMatchObject({ status: 'waiting', intervalSeconds: expected });
    }
    await a.cleanup();
  });

  it('denied → stops with an error', async () => {
    const a = await accessFixture(sb);
    const { state } = await drive(a, async (n, userCode) => {
      if (n === 0) await sb.hook('device/deny', { userCode });
    });
    expect(state).toMatchObject({ status: 'denied', error: 'access_denied', polls: 1 });
    await a.cleanup();
  });

  it('nobody logs in → expired after expires_in without polling past it', async () => {
    // Our clock moves only when the test moves it: the waits add up to expires_in however slow the machine.
    const start = Date.now();
    const a = await accessFixture(sb, { clock: new OffsetClock({ now: () => start }) });
    const { state, waits } = await drive(a);
    expect(state.status).toBe('expired');
    expect(waits.reduce((x, y) => x + y, 0)).toBe(600);
    expect((await sb.hook('stats')).body.token.device_code).toBe(119);
    await a.cleanup();
  });

  it('refresh stores the new refresh token; LoginRequired after 30 minutes idle, visible in the metadata', async () => {
    const a = await accessFixture(sb);
    const device = await sb.deviceAuthorization();
    await sb.hook('device/approve', { userCode: device.body.user_code, username: 'admin' });
    const tokens = (await sb.pollDevice(device.body.device_code)).body;
    await a.delegated.connect(tokens);
    await a.advance(1500);
    const meta = await a.delegated.refresh();
    expect(meta.state).toBe('connected');
    const rotated = await a.file.get(a.delegated.secretName);
    expect(rotated).not.toBe(tokens.refresh_token);
    expect((await sb.hook('stats')).body.token.refresh_token).toBe(1);
    // Within the idle window measured from the refresh: still fine, access token from cache.
    expect(typeof (await a.delegated.getToken())).toBe('string');
    await a.advance(1800);
    const err = await failure(a.delegated.getToken());
    expect(err).toBeInstanceOf(LoginRequired);
    expect(err.message).toMatch(/device login|tenant-integrations login/);
    expect(await a.delegated.status()).toMatchObject({ state: 'login-required' });
    await a.cleanup();
  });

  it.each([
    ['the person is signed out everywhere', 'sessions/end'],
    ['the person is disabled', 'people/disable'],
  ])("%s: the keeper's refresh marks the session login-required", async (_what, hook) => {
    const a = await accessFixture(sb);
    try {
      const device = await sb.deviceAuthorization();
      await sb.hook('device/approve', { userCode: device.body.user_code, username: 'admin' });
      await a.delegated.connect((await sb.pollDevice(device.body.device_code)).body);
      await sb.hook(hook, { username: 'admin' });
      const err = await failure(a.delegated.refresh());
      expect(err).toBeInstanceOf(LoginRequired);
      expect(err.message).toContain('invalid_grant');
      expect(await a.delegated.status()).toMatchObject({ state: 'login-required' });
    } finally {
      await sb.hook('reset');
      await a.cleanup();
    }
  });

  it('with nothing stored, getToken is LoginRequired', async () => {
    const a = await accessFixture(sb);
    await expect(a.delegated.getToken()).rejects.toBeInstanceOf(LoginRequired);
    await a.cleanup();
  });

  it('a refresh during an IdP outage is an upstream error, not a lost session', async () => {
    const a = await accessFixture(sb);
    const tokens = await sb.personTokens();
    await a.delegated.connect({ ...tokens, token_type: 'Bearer' });
    await sb.hook('faults', { route: 'token', count: 4, status: 503 });
    const err = await failure(a.delegated.refresh());
    expect(err.code).toBe('upstream_unavailable');
    expect(await a.delegated.status()).toMatchObject({ state: 'connected' });
    expect((await a.delegated.refresh()).state).toBe('connected');
    await a.cleanup();
  });
});
