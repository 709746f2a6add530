import { randomBytes } from 'node:crypto';
import type { SecretStore } from '../secrets/types';
import type { DeviceCode, DeviceFlowState, PollOutcome } from './device-flow';

/** Names shared by the starter, the orchestrator and its activities. */
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
