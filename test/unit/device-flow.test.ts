import {
  afterPoll,
  cancel,
  nextStep,
  startDeviceFlow,
  type DeviceFlowState,
} from '../../shared/device-login/flow';

const T0 = 1_700_000_000_000;
const code = {
  deviceCode: 'd',
  userCode: 'BCDF-1234',
  verificationUri: 'https://idp/realms/t/device',
  expiresInSeconds: 600,
  intervalSeconds: 5,
};
const waiting = (s: DeviceFlowState) => {
  if (s.status !== 'waiting') throw new Error(`not waiting: ${s.status}`);
  return s;
};

describe('device-flow state machine (docs/service-rules.md#device-flow)', () => {
  it('starts waiting, shows the code and link, first poll after one interval', () => {
    const s = waiting(startDeviceFlow(code, T0));
    expect(s).toMatchObject({
      userCode: 'BCDF-1234',
      verificationUriComplete: 'https://idp/realms/t/device?user_code=BCDF-1234',
      intervalSeconds: 5,
    });
    expect(nextStep(s, T0).step).toEqual({ action: 'wait', until: T0 + 5000 });
    expect(nextStep(s, T0 + 5000).step).toEqual({ action: 'poll' });
  });

  it('interval defaults to 5 when absent', () => {
    expect(waiting(startDeviceFlow({ ...code, intervalSeconds: undefined }, T0)).intervalSeconds).toBe(5);
  });

  it('authorization_pending → keep waiting the same interval', () => {
    const s = waiting(
      afterPoll(startDeviceFlow(code, T0), { kind: 'error', error: 'authorization_pending' }, T0 + 5000),
    );
    expect(s).toMatchObject({ intervalSeconds: 5, nextPollAt: T0 + 10_000, polls: 1 });
  });

  it('slow_down → interval +5 s every time', () => {
    let s = startDeviceFlow(code, T0);
    for (const [i, expected] of [10, 15, 20].entries()) {
      s = afterPoll(s, { kind: 'error', error: 'slow_down' }, T0 + i * 1000);
      expect(waiting(s).intervalSeconds).toBe(expected);
      expect(waiting(s).nextPollAt).toBe(T0 + i * 1000 + expected * 1000);
    }
  });

  it('200 → authorised', () => {
    expect(afterPoll(startDeviceFlow(code, T0), { kind: 'token' }, T0 + 5000)).toEqual({
      status: 'authorised',
      polls: 1,
    });
  });

  it.each([
    ['access_denied', 'denied'],
    ['expired_token', 'expired'],
    ['invalid_grant', 'failed'],
    ['something_new', 'failed'],
  ])('%s → %s (any other error stops)', (error, status) => {
    const s = afterPoll(startDeviceFlow(code, T0), { kind: 'error', error }, T0 + 5000);
    expect(s.status).toBe(status);
    expect(nextStep(s, T0 + 6000).step).toEqual({ action: 'stop' });
  });

  it('no answer (network, 5xx) is not an error response: keep polling', () => {
    expect(afterPoll(startDeviceFlow(code, T0), { kind: 'transient' }, T0 + 5000).status).toBe('waiting');
  });

  it('expires_in elapsed → expired; never waits past the expiry', () => {
    let s = startDeviceFlow(code, T0);
    s = afterPoll(s, { kind: 'error', error: 'slow_down' }, T0 + 595_000);
    expect(nextStep(s, T0 + 595_000).step).toEqual({ action: 'wait', until: T0 + 600_000 });
    expect(nextStep(s, T0 + 600_000)).toEqual({
      step: { action: 'stop' },
      state: { status: 'expired', polls: 1 },
    });
  });

  it('cancel ends a waiting flow and leaves a finished one alone', () => {
    expect(cancel(startDeviceFlow(code, T0))).toEqual({ status: 'cancelled', polls: 0 });
    expect(cancel({ status: 'authorised', polls: 2 })).toEqual({ status: 'authorised', polls: 2 });
  });

  it('is deterministic: the same inputs replay to the same states', () => {
    const run = () => {
      let s = startDeviceFlow(code, T0);
      const trace: unknown[] = [];
      for (const [t, o] of [
        [5000, { kind: 'error', error: 'authorization_pending' }],
        [10_000, { kind: 'error', error: 'slow_down' }],
        [20_000, { kind: 'token' }],
      ] as const) {
        s = afterPoll(s, o, T0 + t);
        trace.push(s, nextStep(s, T0 + t));
      }
      return trace;
    };
    expect(run()).toEqual(run());
  });
});
