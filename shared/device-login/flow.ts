/**
 * The device-flow poll loop (docs/service-rules.md#device-flow) as a pure state machine. It never reads the clock or sleeps: its
 * driver (the durable orchestrator with durable timers, or the CLI with real time) passes `now` in and
 * does the waiting and the HTTP. Replay-safe: same inputs, same outputs.
 */

export const DEFAULT_POLL_INTERVAL_SECONDS = 5;
export const SLOW_DOWN_INCREMENT_SECONDS = 5;

export interface DeviceCode {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  expiresInSeconds: number;
  intervalSeconds?: number;
}

export type DeviceFlowState =
  | {
      status: 'waiting';
      userCode: string;
      verificationUri: string;
      verificationUriComplete: string;
      startedAt: number;
      expiresAt: number;
      intervalSeconds: number;
      nextPollAt: number;
      polls: number;
    }
  | { status: 'authorised'; polls: number }
  | { status: 'denied'; polls: number; error: string }
  | { status: 'expired'; polls: number }
  | { status: 'failed'; polls: number; error: string; description?: string }
  | { status: 'cancelled'; polls: number };

export type PollOutcome =
  | { kind: 'token' }
  | { kind: 'error'; error: string; description?: string }
  /** No answer (network, timeout, 5xx): not an error response, so keep polling until expiry. */
  | { kind: 'transient' };

export type Step = { action: 'wait'; until: number } | { action: 'poll' } | { action: 'stop' };

/** The state right after the device authorization response; the first poll waits one interval. */
export function startDeviceFlow(code: Omit<DeviceCode, 'deviceCode'>, now: number): DeviceFlowState {
  const intervalSeconds = code.intervalSeconds ?? DEFAULT_POLL_INTERVAL_SECONDS;
  return {
    status: 'waiting',
    userCode: code.userCode,
    verificationUri: code.verificationUri,
    verificationUriComplete:
      code.verificationUriComplete ??
      `${code.verificationUri}?user_code=${encodeURIComponent(code.userCode)}`,
    startedAt: now,
    expiresAt: now + code.expiresInSeconds * 1000,
    intervalSeconds,
    nextPollAt: now + intervalSeconds * 1000,
    polls: 0,
  };
}

/** What to do now: wait until a time, poll, or stop. Expiry wins over a pending poll. */
export function nextStep(state: DeviceFlowState, now: number): { step: Step; state: DeviceFlowState } {
  if (state.status !== 'waiting') return { step: { action: 'stop' }, state };
  if (now >= state.expiresAt)
    return { step: { action: 'stop' }, state: { status: 'expired', polls: state.polls } };
  if (now < state.nextPollAt)
    return { step: { action: 'wait', until: Math.min(state.nextPollAt, state.expiresAt) }, state };
  return { step: { action: 'poll' }, state };
}

/** Applies one poll's result: every row of the poll table. */
export function afterPoll(state: DeviceFlowState, outcome: PollOutcome, now: number): DeviceFlowState {
  if (state.status !== 'waiting') return state;
  const polls = state.polls + 1;
  const again = (intervalSeconds: number): DeviceFlowState => ({
    ...state,
    polls,
    intervalSeconds,
    nextPollAt: now + intervalSeconds * 1000,
  });
  if (outcome.kind === 'token') return { status: 'authorised', polls };
  if (outcome.kind === 'transient') return again(state.intervalSeconds);
  switch (outcome.error) {
    case 'authorization_pending':
      return again(state.intervalSeconds);
    case 'slow_down':
      return again(state.intervalSeconds + SLOW_DOWN_INCREMENT_SECONDS);
    case 'expired_token':
      return { status: 'expired', polls };
    case 'access_denied':
      return { status: 'denied', polls, error: outcome.error };
    default:
      // Any other error stops, unknown ones included (docs/service-rules.md#device-flow).
      return { status: 'failed', polls, error: outcome.error, description: outcome.description };
  }
}

export function cancel(state: DeviceFlowState): DeviceFlowState {
  return state.status === 'waiting' ? { status: 'cancelled', polls: state.polls } : state;
}
