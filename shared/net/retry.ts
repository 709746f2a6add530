/**
 * The app's one retry policy: capped exponential backoff with jitter, honouring Retry-After, sleeps that abort
 * with the caller. Every client that retries (GraphQL, token, delegated refresh, webhook) goes through
 * `withRetries`; each decides for itself which of its failures are transient.
 */
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

/** What a failed attempt saw, for the wait before the next one and for the error when none is left. */
export interface TransientFailure {
  /** The HTTP status, or 0 when there was no answer (network error, reset, timeout). */
  status: number;
  retryAfter?: string | null;
  cause?: unknown;
}

/** One attempt's outcome: done with a value, or a transient failure that another attempt may get past. */
export type Attempt<T> = { done: T } | { transient: TransientFailure };

export interface WithRetriesOptions {
  abortSignal?: AbortSignal;
  /** Reads "now" for Retry-After dates. */
  clock?: { now(): number };
  random?: () => number;
  /** Before each wait: for a log line naming the operation, attempt and status. */
  onRetry?: (attempt: number, waitMs: number, failure: TransientFailure) => void;
  /** The error when every attempt failed transiently. */
  exhausted: (failure: TransientFailure, attempts: number) => Error;
  /**
   * Failures that do not use up an attempt while the waits after them (each counted as a second at least) stay
   * within `budgetMs` in all: a 429 says "not now", not "broken" — a stream waits it out rather than fail
   * (docs/sync.md, "First contact").
   */
  patience?: { when: (failure: TransientFailure) => boolean; budgetMs: number };
}

/**
 * Runs `operation` until it is done, at most `policy.maxAttempts` times, waiting between attempts as the policy
 * and the server's Retry-After say. A permanent failure is the operation's to throw: it ends the retries at once.
 */
export async function withRetries<T>(
  operation: (attempt: number) => Promise<Attempt<T>>,
  policy: RetryPolicy,
  options: WithRetriesOptions,
): Promise<T> {
  let counted = 0; // failures that used up an attempt
  let patientMs = 0;
  for (let attempt = 1; ; attempt++) {
    const outcome = await operation(attempt);
    if ('done' in outcome) return outcome.done;
    const failure = outcome.transient;
    const now = options.clock?.now() ?? Date.now();
    const waitMs = retryDelayMs(Math.min(attempt, 32), policy, failure.retryAfter, now, options.random);
    // Each patient wait counts a second at least: a server that says "Retry-After: 0" forever ends too.
    const cost = Math.max(waitMs, 1000);
    const patient = options.patience?.when(failure) === true && patientMs + cost <= options.patience.budgetMs;
    if (patient) patientMs += cost;
    else if (++counted >= policy.maxAttempts) throw options.exhausted(failure, attempt);
    options.onRetry?.(attempt, waitMs, failure);
    await sleep(waitMs, options.abortSignal);
  }
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

/** What an operation that ran out of time fails with: the error `AbortSignal.timeout` gives. */
export const timeoutError = () =>
  new DOMException('The operation was aborted due to timeout', 'TimeoutError');

/**
 * Runs `work` with one signal that fires on the caller's abort or after `timeoutMs`, and lets both go when it
 * settles. Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: its timer and what it holds live out the
 * whole timeout after the request is done — ~3 KB a request, tens of MB over a pass that asks for a page every few
 * milliseconds (docs/benchmarks.md, "A timer per request").
 */
export async function withTimeout<T>(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(timeoutError()), timeoutMs);
  timer.unref();
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

export const isTransientStatus = (status: number) => status === 408 || status === 429 || status >= 500;
