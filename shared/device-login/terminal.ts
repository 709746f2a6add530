import { systemClock, type Clock } from '../clock';
import { sleep as realSleep } from '../net/retry';
import { afterPoll, cancel, nextStep, startDeviceFlow, type DeviceCode, type DeviceFlowState } from './flow';
import { pollDeviceToken } from './idp';
import type { TenantEndpoints } from '../auth/endpoints';
import type { DelegatedTokenResponse, FetchLike } from '../auth/oauth';

export interface DeviceFlowDriverOptions {
  clock?: Clock;
  /** How to wait; tests pass one that moves their clocks instead of sleeping. Rejects when aborted. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Aborting ends the flow as `cancelled` (Ctrl-C in the terminal). */
  abortSignal?: AbortSignal;
  fetch?: FetchLike;
  timeoutMs?: number;
  /** Called with every new state (after each poll and at the end). */
  onState?: (state: DeviceFlowState) => void;
}

/**
 * Drives the device-flow state machine in real time: the terminal's counterpart of the durable
 * orchestrator, over the same rules. The tokens come back to the caller to store, never to `onState`.
 */
export async function runDeviceFlow(
  endpoints: TenantEndpoints,
  code: DeviceCode,
  options: DeviceFlowDriverOptions = {},
): Promise<{ state: DeviceFlowState; tokens?: DelegatedTokenResponse }> {
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? realSleep;
  const signal = options.abortSignal;
  let state = startDeviceFlow(code, clock.now());
  let tokens: DelegatedTokenResponse | undefined;
  options.onState?.(state);
  for (;;) {
    if (signal?.aborted) state = cancel(state);
    const next = nextStep(state, clock.now());
    if (next.state !== state) options.onState?.(next.state);
    state = next.state;
    if (next.step.action === 'stop') return { state, tokens };
    if (next.step.action === 'wait') {
      try {
        await sleep(Math.max(0, next.step.until - clock.now()), signal);
      } catch (err) {
        if (!signal?.aborted) throw err;
      }
      continue;
    }
    let reply;
    try {
      reply = await pollDeviceToken(endpoints, code.deviceCode, {
        fetch: options.fetch,
        timeoutMs: options.timeoutMs,
        abortSignal: signal,
      });
    } catch (err) {
      if (signal?.aborted) continue; // becomes `cancelled` at the top of the loop
      throw err;
    }
    state = afterPoll(state, reply.outcome, clock.now());
    tokens = reply.tokens ?? tokens;
    options.onState?.(state);
  }
}
