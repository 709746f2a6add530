import { InvocationContext } from '@azure/functions';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

jest.setTimeout(90_000);
// The replay test loads the orchestrator in this process: the local host's stand-in for the worker module.
jest.mock('@azure/functions-core', () => jest.requireActual('../../devhost/functions-core').functionsCore, {
  virtual: true,
});

let stack: Stack;
const seen: string[] = []; // every response body of the run, checked for tokens at the end

beforeAll(async () => {
  stack = await stackFixture();
});
afterAll(() => stack?.close());

async function call(path: string, init: RequestInit = {}, key?: string | null) {
  const r = await stack.json(path, init, key);
  seen.push(r.text);
  return r;
}
const start = (force = false) => call(`manage/device-login${force ? '?force=true' : ''}`, { method: 'POST' });
const status = (id: string) => call(`manage/device-login/${id}`);
const until = (id: string, state: string) =>
  eventually(async () => {
    const s = await status(id);
    return s.body.state === state && s.body;
  }, `device login to be ${state}`);
const deviceCodePolls = async () => (await stack.sb.hook('stats')).body.token.device_code as number;
/** Waits until the orchestration has made `n` polls in total (it polls after each durable timer). */
const polled = (n: number) => eventually(async () => (await deviceCodePolls()) >= n, `${n} polls`);

async function fresh() {
  await stack.sb.hook('reset');
  const r = await start(true);
  expect(r.status).toBe(202);
  return r.body;
}

describe('admin device login through the local host against the sandbox', () => {
  it('needs the admin key', async () => {
    expect((await stack.api('manage/device-login', { method: 'POST' }, null)).status).toBe(401);
    expect((await stack.api('manage/device-login', { method: 'POST' }, stack.keys.function)).status).toBe(
      401,
    );
  });

  it('starts: 202 with the code, link, expiry and our status URL — no durable system URLs', async () => {
    await stack.sb.hook('reset');
    const r = await start();
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({
      id: `device-login-${stack.sb.tenant}`,
      state: 'waiting',
      intervalSeconds: 5,
    });
    expect(r.body.userCode).toMatch(/^[A-Z]{4}-\d{4}$/);
    expect(r.body.verificationUriComplete).toBe(
      `${stack.sb.authUrl}/realms/${stack.sb.tenant}/device?user_code=${r.body.userCode}`,
    );
    expect(Date.parse(r.body.expiresAt) - Date.parse(r.body.createdAt)).toBeGreaterThan(590_000);
    expect(r.body.statusUrl).toBe(`${stack.apiBaseUrl}/manage/device-login/${r.body.id}`);
    expect(r.headers.get('location')).toBe(r.body.statusUrl);
    expect(r.body.qrSvg).toContain('<svg');
    expect(r.text).not.toMatch(/runtime\/webhooks|_rpc|[?&]code=|device_code|deviceCode/);
    // One per tenant: a second start is refused with the running one's status…
    const again = await start();
    expect(again.status).toBe(409);
    expect(again.body.login.userCode).toBe(r.body.userCode);
    // …saying when to try again: once its code has expired (600 s from now, at most).
    const retryAfter = Number(again.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(500);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(again.body.retryAfterSeconds).toBe(retryAfter);
    // …unless forced, which replaces it.
    const forced = await start(true);
    expect(forced.status).toBe(202);
    expect(forced.body.userCode).not.toBe(r.body.userCode);
    expect((await stack.sb.hook('stats')).body.deviceAuthorization).toBe(2);
  });

  it('bad input is a 4xx naming the problem', async () => {
    expect((await call('manage/device-login?force=maybe', { method: 'POST' })).status).toBe(400);
    expect((await call('manage/device-login/..%2Fetc')).status).toBe(400);
    expect((await call('manage/device-login/device-login-nope')).status).toBe(404);
  });

  it('authorization_pending keeps polling every interval; approval → authorised, refresh token stored, person named', async () => {
    const login = await fresh();
    await stack.advance(5);
    await polled(1);
    await stack.advance(5);
    await polled(2);
    expect((await status(login.id)).body.state).toBe('waiting');
    await stack.sb.hook('device/approve', { userCode: login.userCode, username: 'admin' });
    await stack.advance(5);
    const done = await until(login.id, 'authorised');
    expect(done).toMatchObject({ username: 'admin', name: 'Ada Admin' });
    expect(await deviceCodePolls()).toBe(3);
    const secrets = await stack.secrets();
    expect(secrets['delegated-refresh-token-acme']).toEqual(expect.any(String));
    const session = await call('manage/session');
    expect(session.body).toMatchObject({ state: 'connected', username: 'admin', name: 'Ada Admin' });
    expect(session.body.nextRefreshAt).toEqual(expect.any(String));
    expect((await call('manage/health')).body).toMatchObject({
      status: 'ok',
      tenant: 'acme',
      delegatedSession: 'connected',
    });
  });

  it('the orchestrator is deterministic: replaying a completed history gives the same actions and output', async () => {
    const login = await fresh();
    // The code the IdP issued, as only it and the secret store should know it.
    const deviceCode = stack.sb.sandbox.devices.pendingByUserCode(login.userCode)?.deviceCode as string;
    expect(deviceCode).toEqual(expect.any(String));
    await stack.advance(5);
    await polled(1);
    await stack.sb.hook('device/approve', { userCode: login.userCode, username: 'admin' });
    await stack.advance(5);
    const done = await until(login.id, 'authorised');
    const instanceUrl = `${stack.url}/runtime/webhooks/durabletask/instances/${login.id}?code=${stack.keys.system}`;
    await eventually(
      async () =>
        ((await (await fetch(instanceUrl)).json()) as { runtimeStatus: string }).runtimeStatus ===
        'Completed',
      'the login orchestration to complete',
    );
    const history = await (
      await fetch(`${instanceUrl}&showHistory=true&showHistoryOutput=true&showInput=true`)
    ).text();
    const { historyEvents } = JSON.parse(history);
    // A storage reader sees the task hub's history: the device code is never in it, and it has left the store.
    expect(history).not.toContain(deviceCode);
    // The ticket, as the request-code activity's result; its code has left the store now the login ended.
    const handle = /handle\\":\\"([0-9a-f]{32})/.exec(history)?.[1];
    expect(handle).toEqual(expect.any(String));
    expect(await stack.secrets()).not.toHaveProperty(`device-code-${handle}`);
    // Logins replaced by force=true earlier in this file were cancelled, not terminated: none left a code.
    expect(Object.keys(await stack.secrets()).filter((k) => k.startsWith('device-code-'))).toEqual([]);
    // What the run scheduled, in order, as the durable layer recorded it.
    const recorded = (historyEvents as HistoryEvent[]).flatMap((e) =>
      e.EventType === 4
        ? [`activity ${e.Name}`]
        : e.EventType === 10
          ? [`timer ${new Date(e.FireAt as string).toISOString()}`]
          : [],
    );
    expect(recorded).toEqual([
      'activity deviceLoginRequestCode',
      expect.stringMatching(/^timer /),
      'activity deviceLoginPoll',
      expect.stringMatching(/^timer /),
      'activity deviceLoginPoll',
      'activity deviceLoginForget',
    ]);
    // Replay twice, with the wall clock somewhere else and randomness forbidden: same actions, same output.
    const now = jest.spyOn(Date, 'now').mockReturnValue(Date.parse('2031-01-01T00:00:00Z'));
    const random = jest.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random in an orchestrator');
    });
    try {
      const first = await replay(login.id, historyEvents);
      const second = await replay(login.id, historyEvents);
      expect(second).toEqual(first);
      expect(first.isDone).toBe(true);
      expect(scheduledBy(first.actions)).toEqual(recorded);
      expect(first.output).toMatchObject({ state: 'authorised', username: done.username, polls: 2 });
      // The status is the outcome, with the login's run id (its trace and run-history id).
      expect(first.customStatus).toEqual({
        ...(first.output as object),
        runId: expect.stringMatching(/^login-/),
      });
    } finally {
      now.mockRestore();
      random.mockRestore();
    }
  });

  it('slow_down raises the interval by 5 s each time', async () => {
    const login = await fresh();
    // The sandbox's clock moves only when the test moves it: however slow the machine, a poll the host makes
    // after moving only its own clock comes within the interval for the sandbox.
    await stack.sb.hook('clock', { frozen: true });
    await stack.advance(5);
    await polled(1);
    // Only the host's clock moves: the next poll comes too early for the sandbox → slow_down.
    await stack.advanceHostOnly(5);
    await polled(2);
    // The status changes when the orchestration has taken the poll's answer in: wait for that, not for 'waiting'.
    await eventually(async () => (await status(login.id)).body.intervalSeconds === 10 && true, 'interval 10');
    await stack.advanceHostOnly(10);
    await polled(3);
    await eventually(async () => (await status(login.id)).body.intervalSeconds === 15 && true, 'interval 15');
    // Nothing polls before the grown interval has passed.
    await stack.advanceHostOnly(14);
    await new Promise((r) => setTimeout(r, 300));
    expect(await deviceCodePolls()).toBe(3);
  });

  it('any other error stops: denied', async () => {
    const login = await fresh();
    await stack.sb.hook('device/deny', { userCode: login.userCode });
    await stack.advance(5);
    await until(login.id, 'denied');
  });

  it('nobody logs in: expired after expires_in', async () => {
    const login = await fresh();
    await stack.advance(600);
    await until(login.id, 'expired');
    expect(await deviceCodePolls()).toBeLessThanOrEqual(1);
  });

  it('cancel ends the polling at once', async () => {
    const login = await fresh();
    const r = await call(`manage/device-login/${login.id}/cancel`, { method: 'POST' });
    expect(r.status).toBe(202);
    await until(login.id, 'cancelled');
    await stack.advance(30);
    await new Promise((r2) => setTimeout(r2, 300));
    expect(await deviceCodePolls()).toBe(0);
    // Cancelling a login that has ended is what was asked for already: 200 with its state, never an error.
    const again = await call(`manage/device-login/${login.id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: login.id, state: 'cancelled' });
  });

  it('the keeper refreshes inside the idle window and stores each new refresh token; a failed refresh → login-required', async () => {
    const login = await fresh();
    await stack.sb.hook('device/approve', { userCode: login.userCode, username: 'admin' });
    await stack.advance(5);
    await until(login.id, 'authorised');
    const first = (await stack.secrets())['delegated-refresh-token-acme'];
    // 11 minutes idle: the keeper refreshes.
    await stack.advance(11 * 60);
    // 202, or 409 when the keeper's own schedule fired as the clock moved and is doing it.
    expect([202, 409]).toContain((await stack.runFunction('delegatedSessionKeeper')).status);
    await eventually(async () => {
      const now = (await stack.secrets())['delegated-refresh-token-acme'];
      return now !== first && now;
    }, 'the new refresh token stored');
    expect((await stack.sb.hook('stats')).body.token.refresh_token).toBe(1);
    // A run right after does nothing: not idle long enough.
    await stack.runFunction('delegatedSessionKeeper');
    expect((await stack.sb.hook('stats')).body.token.refresh_token).toBe(1);
    // Past the 30-minute idle window nothing can refresh it any more.
    await stack.advance(31 * 60);
    // The keeper's own schedule may fire while the clock moves; then this call answers 409 and that run does it.
    await stack.runFunction('delegatedSessionKeeper');
    await eventually(
      async () => (await call('manage/session')).body.state === 'login-required',
      'the session marked login-required',
    );
    expect((await stack.sb.hook('stats')).body.token.refresh_token).toBe(2);
    expect((await call('manage/session')).body).toMatchObject({ state: 'login-required' });
    expect((await call('manage/health')).body).toMatchObject({
      status: 'degraded',
      delegatedSession: 'login-required',
    });
    // Anonymous probes learn the status alone: not the tenant, not the admin session's state.
    expect((await call('health', {}, null)).body).toEqual({ status: 'degraded' });
    expect((await call('manage/health', {}, null)).status).toBe(401);
  });

  it('no token or refresh token appears in any response, custom status or log line of the run', async () => {
    const secrets = await stack.secrets();
    const refreshToken = secrets['delegated-refresh-token-acme'];
    expect(refreshToken).toBeTruthy();
    const everything = [...seen, stack.logs()].join('\n');
    expect(everything).not.toContain(refreshToken);
    expect(everything).not.toContain(stack.sb.clientSecret);
    // No JWT (access or ID token) anywhere.
    expect(everything).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/);
    // Custom status and history as stored by the durable layer: no refresh token there either.
    const history = await (
      await fetch(
        `${stack.url}/runtime/webhooks/durabletask/instances/device-login-acme?showHistory=true&code=${stack.keys.system}`,
      )
    ).text();
    expect(history).not.toContain(refreshToken);
    expect(history).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/);
  });
});

interface HistoryEvent {
  EventType: number;
  Name?: string;
  FireAt?: string;
  [key: string]: unknown;
}
interface Action {
  actionType: number;
  functionName?: string;
  fireAt?: string | Date;
  compoundActions?: Action[];
}
interface OrchestratorState {
  isDone: boolean;
  actions: Action[][];
  output?: unknown;
  customStatus?: unknown;
}

/** Runs the registered orchestrator over a whole history, as the Functions host does on a replay. */
async function replay(instanceId: string, history: HistoryEvent[]): Promise<OrchestratorState> {
  const { registrations } = jest.requireActual('../../devhost/functions-core');
  if (!registrations.has('deviceLogin')) require('../../functions/device-login');
  const trigger = {
    history: history.map((e) => ({ ...e, IsPlayed: true })),
    input: undefined,
    instanceId,
    isReplaying: true,
    parentInstanceId: '',
    upperSchemaVersion: 3,
    maximumShortTimerDuration: '6.00:00:00',
    longRunningTimerIntervalDuration: '3.00:00:00',
    defaultHttpAsyncRequestSleepTimeMillseconds: 30_000,
  };
  const context = new InvocationContext({ invocationId: 'replay', functionName: 'deviceLogin' });
  return (await registrations.get('deviceLogin').handler(trigger, context)) as OrchestratorState;
}

/** The activities and timers among an orchestrator's actions (external-event waits schedule nothing). */
function scheduledBy(actions: Action[][]): string[] {
  const leaves = (a: Action): Action[] => (a.compoundActions ? a.compoundActions.flatMap(leaves) : [a]);
  return actions
    .flat()
    .flatMap(leaves)
    .flatMap((a) =>
      a.actionType === 0
        ? [`activity ${a.functionName}`]
        : a.actionType === 5
          ? [`timer ${new Date(a.fireAt as string).toISOString()}`]
          : [],
    );
}
