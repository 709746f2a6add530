import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import { afterPoll, cancel, nextStep, startDeviceFlow } from '../shared/auth/device-flow';
import {
  DEVICE_LOGIN,
  viewOf,
  type DeviceCodeTicket,
  type Person,
  type PollResult,
} from '../shared/auth/device-login';

/**
 * Drives the shared device-flow state machine with durable timers (seed §3). Deterministic: the only
 * clock is `currentUtcDateTime`; every HTTP call is an activity; no token and no device code ever enters its
 * state or history (it holds a ticket whose handle names the code in the session secret store).
 */
export function* deviceLoginOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const now = () => context.df.currentUtcDateTime.getTime();
  context.df.setCustomStatus({ state: 'starting' });
  let code: DeviceCodeTicket;
  try {
    code = (yield context.df.callActivity(DEVICE_LOGIN.requestCode)) as DeviceCodeTicket;
  } catch (err) {
    const failed = {
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

df.app.orchestration(DEVICE_LOGIN.orchestrator, deviceLoginOrchestrator);
