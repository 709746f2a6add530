import type { OrchestrationContext, Task } from 'durable-functions';
import { randomBytes } from 'node:crypto';
import type { AccessLayer } from '../access';
import { tenantEndpoints } from '../auth/endpoints';
import type { SecretStore } from '../secrets/types';
import {
  afterPoll,
  cancel,
  nextStep,
  startDeviceFlow,
  type DeviceCode,
  type DeviceFlowState,
  type PollOutcome,
} from './flow';
import { pollDeviceToken, requestDeviceCode } from './idp';

/** Names shared by the starter, the orchestrator and its activities: each function registers under one of these. */
export const DEVICE_LOGIN = {
  orchestrator: 'deviceLogin',
  requestCode: 'deviceLoginRequestCode',
  poll: 'deviceLoginPoll',
  forget: 'deviceLoginForget',
  cancelEvent: 'cancel',
} as const;

/** One device login per tenant at a time: a deterministic instance id. */
export const deviceLoginInstanceId = (tenant: string) =>
  `device-login-${tenant.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`;

export interface Person {
  username: string;
  name?: string;
}

/** What the poll activity returns to the orchestrator: never a token. */
export interface PollResult {
  outcome: PollOutcome;
  person?: Person;
}

/** The orchestration's custom status and our routes' body: the state, the code and link while waiting. */
export type DeviceLoginView =
  | { state: 'starting' }
  | {
      state: 'waiting';
      userCode: string;
      verificationUri: string;
      verificationUriComplete: string;
      expiresAt: string;
      intervalSeconds: number;
      polls: number;
    }
  | { state: 'authorised'; username: string; name?: string; polls: number }
  | { state: 'denied' | 'expired' | 'cancelled'; polls: number }
  | { state: 'failed'; error: string; polls: number };

export function viewOf(state: DeviceFlowState, person?: Person): DeviceLoginView {
  switch (state.status) {
    case 'waiting':
      return {
        state: 'waiting',
        userCode: state.userCode,
        verificationUri: state.verificationUri,
        verificationUriComplete: state.verificationUriComplete,
        expiresAt: new Date(state.expiresAt).toISOString(),
        intervalSeconds: state.intervalSeconds,
        polls: state.polls,
      };
    case 'authorised':
      return {
        state: 'authorised',
        username: person?.username ?? 'unknown',
        name: person?.name,
        polls: state.polls,
      };
    case 'failed':
      return {
        state: 'failed',
        error: state.description ? `${state.error}: ${state.description}` : state.error,
        polls: state.polls,
      };
    default:
      return { state: state.status, polls: state.polls };
  }
}

/**
 * What the orchestration holds of a device code: everything but the code itself, which lives in the session
 * secret store under a name derived from `handle`. Activity inputs and outputs are kept in the task hub's
 * history, readable with storage access alone; the device code would let such a reader take the session.
 */
export type DeviceCodeTicket = Omit<DeviceCode, 'deviceCode'> & { handle: string };

const HANDLE = /^[0-9a-f]{32}$/;
const secretName = (handle: string) => {
  if (!HANDLE.test(handle)) throw new Error('not a device-code handle');
  return `device-code-${handle}`;
};

/** Stores the device code under a fresh, never-reused name (Key Vault keeps deleted names reserved). */
export async function keepDeviceCode(store: SecretStore, code: DeviceCode): Promise<DeviceCodeTicket> {
  const { deviceCode, ...rest } = code;
  const handle = randomBytes(16).toString('hex');
  await store.set(secretName(handle), deviceCode);
  return { ...rest, handle };
}

export const readDeviceCode = (store: SecretStore, handle: string) => store.get(secretName(handle));

export const forgetDeviceCode = (store: SecretStore, handle: string) => store.delete(secretName(handle));

/**
 * Activity body: the device authorization request (`client_id=portal`, `scope=openid`; docs/admin-login.md). The
 * device code goes to the session secret store; the orchestration (and so its history) gets a ticket instead.
 */
export async function requestCodeActivity(access: AccessLayer): Promise<DeviceCodeTicket> {
  return keepDeviceCode(access.sessionSecrets, await requestDeviceCode(tenantEndpoints(access.tenant)));
}

/**
 * Activity body: one poll, given the ticket's handle (the device code is read from the secret store). On success
 * the tokens go straight into the delegated session (refresh token to the secret store); the orchestrator only
 * learns who signed in.
 */
export async function pollActivity(access: AccessLayer, handle: string): Promise<PollResult> {
  const deviceCode = await readDeviceCode(access.sessionSecrets, handle);
  const { outcome, tokens } = await pollDeviceToken(tenantEndpoints(access.tenant), deviceCode);
  if (!tokens) return { outcome };
  const session = await access.delegated.connect(tokens);
  return { outcome, person: { username: session.username, name: session.name } };
}

/** Activity body: the login has ended (any way), so its device code leaves the secret store. */
export const forgetActivity = (access: AccessLayer, handle: string) =>
  forgetDeviceCode(access.sessionSecrets, handle);

/**
 * The orchestration: drives the device-flow state machine (./flow.ts) with durable timers. Deterministic: the only
 * clock is `currentUtcDateTime`; every HTTP call is an activity; no token and no device code ever enters its state
 * or history (it holds a ticket whose handle names the code in the session secret store). A `cancel` event ends
 * the polling at once; the code is forgotten however the login ends.
 */
export function* deviceLoginOrchestrator(
  context: OrchestrationContext,
): Generator<Task, DeviceLoginView, unknown> {
  const now = () => context.df.currentUtcDateTime.getTime();
  context.df.setCustomStatus({ state: 'starting' });
  let code: DeviceCodeTicket;
  try {
    code = (yield context.df.callActivity(DEVICE_LOGIN.requestCode)) as DeviceCodeTicket;
  } catch (err) {
    const failed: DeviceLoginView = {
      state: 'failed',
      error: `device code request failed: ${(err as Error).message}`,
      polls: 0,
    };
    context.df.setCustomStatus(failed);
    return failed;
  }
  let state = startDeviceFlow(code, now());
  let person: Person | undefined;
  for (;;) {
    context.df.setCustomStatus(viewOf(state, person));
    const next = nextStep(state, now());
    state = next.state;
    if (next.step.action === 'stop') break;
    if (next.step.action === 'wait') {
      const timer = context.df.createTimer(new Date(next.step.until));
      const cancelled = context.df.waitForExternalEvent(DEVICE_LOGIN.cancelEvent);
      const winner = yield context.df.Task.any([timer, cancelled]);
      if (winner === cancelled) {
        state = cancel(state);
        break;
      }
      continue;
    }
    const result = (yield context.df.callActivity(DEVICE_LOGIN.poll, code.handle)) as PollResult;
    state = afterPoll(state, result.outcome, now());
    person = result.person ?? person;
  }
  const final = viewOf(state, person);
  context.df.setCustomStatus(final);
  try {
    yield context.df.callActivity(DEVICE_LOGIN.forget, code.handle);
  } catch {
    // The login's outcome stands; an unused code expires on its own within its lifetime (600 s).
  }
  return final;
}
