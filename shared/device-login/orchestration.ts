import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import {
  afterPoll,
  cancel,
  nextStep,
  startDeviceFlow,
  type DeviceCode,
  type DeviceFlowState,
  type PollOutcome,
} from './flow';
import type { RunKind } from '../runs/kind';

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

/** The device login's kind of run: the tenant's one login instance, reused by its logins in turn. */
export const LOGIN_RUN: RunKind = {
  kind: 'login',
  span: 'device login',
  failedRecord: 'device login failed',
  instanceId: (_run, tenant) => deviceLoginInstanceId(tenant),
  perRun: false,
};

export interface SignedInPerson {
  username: string;
  name?: string;
}

/** What the poll activity returns to the orchestrator: never a token. */
export interface PollResult {
  outcome: PollOutcome;
  person?: SignedInPerson;
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

export function viewOf(state: DeviceFlowState, person?: SignedInPerson): DeviceLoginView {
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

/** A login attempt as a run: its id (its trace's too) and when it started. */
export const loginRunSchema = z.object({ runId: z.string().min(1).max(100), startedAt: z.iso.datetime() });
export type LoginRun = z.infer<typeof loginRunSchema>;

export const pollInputSchema = loginRunSchema.extend({ handle: z.string().min(1) });
export const endInputSchema = loginRunSchema.extend({
  handle: z.string().min(1).optional(),
  view: z.object({ state: z.string(), error: z.string().optional() }).loose(),
});

/**
 * The orchestration: drives the device-flow state machine (./flow.ts) with durable timers. Deterministic: the only
 * clock is `currentUtcDateTime`; every HTTP call is an activity; no token and no device code ever enters its state
 * or history (it holds a ticket whose handle names the code in the session secret store). A `cancel` event ends
 * the polling at once; however the login ends, the code is forgotten and the login ends in the run history.
 */
export function* deviceLoginOrchestrator(
  context: OrchestrationContext,
): Generator<Task, DeviceLoginView, unknown> {
  const now = () => context.df.currentUtcDateTime.getTime();
  const startedAt = context.df.currentUtcDateTime.toISOString();
  const run: LoginRun = {
    runId: `login-${startedAt.replace(/[:.]/g, '-')}-${context.df.newGuid(`${context.df.instanceId}@${startedAt}`).slice(0, 8)}`,
    startedAt,
  };
  // The run id in the status lets the sweep (shared/runs/sweep.ts) tell this login from a later one.
  const status = (view: DeviceLoginView) => context.df.setCustomStatus({ ...view, runId: run.runId });
  status({ state: 'starting' });
  let code: DeviceCodeTicket | undefined;
  let final: DeviceLoginView;
  try {
    code = (yield context.df.callActivity(DEVICE_LOGIN.requestCode, run)) as DeviceCodeTicket;
    let state = startDeviceFlow(code, now());
    let person: SignedInPerson | undefined;
    for (;;) {
      status(viewOf(state, person));
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
      const result = (yield context.df.callActivity(DEVICE_LOGIN.poll, {
        ...run,
        handle: code.handle,
      })) as PollResult;
      state = afterPoll(state, result.outcome, now());
      person = result.person ?? person;
    }
    final = viewOf(state, person);
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 2_000);
    final = {
      state: 'failed',
      error: code ? `the login failed: ${message}` : `device code request failed: ${message}`,
      polls: 0,
    };
  }
  status(final);
  try {
    yield context.df.callActivity(DEVICE_LOGIN.forget, { ...run, handle: code?.handle, view: final });
  } catch {
    // The login's outcome stands; an unused code expires on its own within its lifetime (600 s).
  }
  return final;
}
