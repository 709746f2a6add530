import { getEventListeners } from 'node:events';
import {
  backoffMs,
  retryAfterMs,
  retryDelayMs,
  withRetries,
  withTimeout,
  type Attempt,
  type TransientFailure,
} from '../../shared/net/retry';

describe('retry policy', () => {
  const policy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
  it('backs off exponentially with jitter between half and the whole ceiling, capped', () => {
    expect(backoffMs(1, policy, () => 0)).toBe(50);
    expect(backoffMs(1, policy, () => 1)).toBe(100);
    expect(backoffMs(3, policy, () => 0.5)).toBe(300);
    expect(backoffMs(10, policy, () => 1)).toBe(1000);
  });
  it('reads Retry-After as seconds or a date, capped, ignoring junk', () => {
    expect(retryAfterMs('2', 0, 10_000)).toBe(2000);
    expect(retryAfterMs('3600', 0, 10_000)).toBe(10_000);
    expect(retryAfterMs(new Date(5000).toUTCString(), 0, 10_000)).toBe(5000);
    expect(retryAfterMs('soon', 0, 10_000)).toBeUndefined();
    expect(retryAfterMs(null, 0, 10_000)).toBeUndefined();
  });
  it("waits what the server's Retry-After says (capped), and backs off when it says nothing readable", () => {
    expect(retryDelayMs(1, policy, '0.5', 0, () => 1)).toBe(500);
    expect(retryDelayMs(1, policy, '60', 0, () => 1)).toBe(1000);
    expect(retryDelayMs(3, policy, 'soon', 0, () => 0.5)).toBe(300);
    expect(retryDelayMs(1, policy, null, 0, () => 0)).toBe(50);
  });
});

describe('withRetries', () => {
  const policy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 };
  const exhausted = (f: TransientFailure, attempts: number) =>
    new Error(`gave up after ${attempts} (${f.status})`);

  it('tries again after a transient failure, waiting what the policy says, and answers the value', async () => {
    const outcomes: Array<Attempt<string>> = [
      { transient: { status: 503 } },
      { transient: { status: 0 } },
      { done: 'ok' },
    ];
    const waits: number[] = [];
    const seen: number[] = [];
    const value = await withRetries(
      async (attempt) => {
        seen.push(attempt);
        return outcomes.shift() as Attempt<string>;
      },
      policy,
      { exhausted, onRetry: (_a, waitMs) => waits.push(waitMs) },
    );
    expect(value).toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
    expect(waits).toHaveLength(2);
    for (const w of waits) expect(w).toBeLessThanOrEqual(policy.maxDelayMs);
  });

  it('gives up after the last attempt with the error the caller builds from what it saw', async () => {
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls++;
          return { transient: { status: 429, retryAfter: '0' } };
        },
        policy,
        { exhausted },
      ),
    ).rejects.toThrow('gave up after 3 (429)');
    expect(calls).toBe(3);
  });

  it('a permanent failure (thrown) ends it at once; an abort ends the wait with the caller’s reason', async () => {
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls++;
          throw new Error('refused for good');
        },
        policy,
        { exhausted },
      ),
    ).rejects.toThrow('refused for good');
    expect(calls).toBe(1);
    const controller = new AbortController();
    const slow = { maxAttempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 };
    const pending = withRetries(async () => ({ transient: { status: 503 } }), slow, {
      exhausted,
      abortSignal: controller.signal,
    });
    controller.abort(new Error('stopped by the caller'));
    await expect(pending).rejects.toThrow('stopped by the caller');
  });
});

describe("a request's timeout", () => {
  /** Work that ends only when its signal fires, as a request does. */
  const never = (signal: AbortSignal) =>
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason));
    });

  it('aborts the work with a TimeoutError when it takes too long', async () => {
    await expect(withTimeout(20, undefined, never)).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it("passes the caller's abort on, with the caller's reason, also when it came before", async () => {
    const caller = new AbortController();
    const pending = withTimeout(60_000, caller.signal, never);
    caller.abort(new Error('stopped by the caller'));
    await expect(pending).rejects.toThrow('stopped by the caller');
    await expect(withTimeout(60_000, caller.signal, never)).rejects.toThrow('stopped by the caller');
  });

  it("lets go when the work is done: its signal never fires later, and the caller's signal keeps no listener", async () => {
    // With AbortSignal.any([caller, AbortSignal.timeout(ms)]) each finished request's signal fired (and was held)
    // until its timeout: ~3 KB a request for 30 s, tens of MB over a long sync pass.
    const caller = new AbortController();
    const used: AbortSignal[] = [];
    for (let i = 0; i < 3; i++)
      expect(await withTimeout(30, caller.signal, async (signal) => (used.push(signal), i))).toBe(i);
    await expect(
      withTimeout(30, caller.signal, async () => Promise.reject(new Error('refused'))),
    ).rejects.toThrow('refused');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(used.map((s) => s.aborted)).toEqual([false, false, false]);
  });
});
