/** Capped exponential backoff with full jitter, honouring Retry-After; sleeps abort with the caller. */
export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 8_000 };

export function backoffMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  // Full jitter, with a floor of half the ceiling so retries never bunch at zero.
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Retry-After as seconds or an HTTP date, capped; undefined when absent or unreadable. */
export function retryAfterMs(
  header: string | null | undefined,
  nowMs: number,
  capMs: number,
): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), capMs) : undefined;
}

/** The wait before the next attempt: the server's Retry-After when it gave a readable one (capped), else backoff. */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  retryAfter: string | null | undefined,
  nowMs: number,
  random?: () => number,
): number {
  return retryAfterMs(retryAfter, nowMs, policy.maxDelayMs) ?? backoffMs(attempt, policy, random);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One signal that fires on the caller's abort or after `timeoutMs`. */
export function withTimeout(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

export const isTransientStatus = (status: number) => status === 408 || status === 429 || status >= 500;
