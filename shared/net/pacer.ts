import { systemClock, type Clock } from '../clock';
import { sleep } from './retry';

/** Reads one header of an answer (lower-case name), null when absent. */
export type HeaderOf = (name: string) => string | null;

const int = (text: string | null): number | undefined => {
  if (text === null || text.trim() === '') return undefined;
  // `RateLimit: limit=8, remaining=3, reset=1` (the draft's later single field) or a plain number.
  const n = Number(text.trim());
  return Number.isFinite(n) && n >= 0 ? n : undefined;
};

/** The draft's combined field: `limit=8, remaining=3, reset=1` (or `"default";r=3;t=1`), read loosely. */
function combined(text: string | null): { limit?: number; remaining?: number; reset?: number } {
  if (!text) return {};
  const get = (...names: string[]) => {
    for (const name of names) {
      const m = new RegExp(`(?:^|[;,\\s])${name}=(\\d+)`).exec(text);
      if (m) return Number(m[1]);
    }
    return undefined;
  };
  return { limit: get('limit', 'q'), remaining: get('remaining', 'r'), reset: get('reset', 't') };
}

/** What an answer said of the rate limit, when it said anything. */
export interface RateState {
  limit?: number;
  remaining?: number;
  /** Seconds until the window starts over. */
  resetSeconds?: number;
}

/**
 * A reset as servers send it, in seconds from now: a delta (the IETF draft), an epoch second (GitHub's
 * X-RateLimit-Reset: any value past 10⁹, September 2001) or an epoch millisecond (many others: past 10¹²). What is
 * in the past is now. Unbounded here: the pacer caps every wait (MAX_WAIT_MS).
 */
export function resetSecondsOf(value: number | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  if (value > 1e12) return Math.max(0, (value - nowMs) / 1000);
  if (value > 1e9) return Math.max(0, value - nowMs / 1000);
  return value;
}

/** `RateLimit-*` (IETF draft), `X-RateLimit-*` (GitHub and many others), or the combined `RateLimit` field. */
export function rateStateOf(header: HeaderOf, nowMs = Date.now()): RateState | undefined {
  const c = combined(header('ratelimit'));
  const limit = int(header('ratelimit-limit')) ?? int(header('x-ratelimit-limit')) ?? c.limit;
  const remaining = int(header('ratelimit-remaining')) ?? int(header('x-ratelimit-remaining')) ?? c.remaining;
  const resetSeconds = resetSecondsOf(
    int(header('ratelimit-reset')) ?? c.reset ?? int(header('x-ratelimit-reset')),
    nowMs,
  );
  if (limit === undefined && remaining === undefined) return undefined;
  return { limit, remaining, resetSeconds };
}

/** The longest one wait lasts, whatever a header said (a reset of years, an epoch misread): as Retry-After's cap. */
export const MAX_WAIT_MS = 60_000;
/** How long one request waits in the pacer in all before it goes anyway (the tenant's answer then decides). */
export const DEFAULT_PATIENCE_MS = 300_000;

export interface PacerOptions {
  clock?: Clock;
  /** Without rate headers, the rate a 429 starts from is half of what was sent in the last second, at least this. */
  minRatePerSecond?: number;
}

/**
 * One per tenant credential, shared by every stream and activity in the process: keeps its requests under the rate
 * the tenant allows, which the seed does not say (docs/sync.md, "First contact").
 *
 * - With rate headers (`RateLimit-*`, `X-RateLimit-*`): spends what the window has left, counting requests still in
 *   flight, and waits for the window's reset when nothing is left.
 * - With none: no pacing until a 429; then additive increase, multiplicative decrease — the rate halves from what was
 *   sent in the last second, and grows by one request a second for each second of answers without a refusal.
 * - `Retry-After` (429, 503) stops every request of the credential until then.
 *
 * `before()` answers undefined when a request may go at once (no promise, no timer: the common case costs nothing).
 */
export class Pacer {
  private readonly clock: Clock;
  private readonly minRate: number;
  private blockedUntil = 0;
  private inFlight = 0;
  // Header mode: what the window has left as far as we know, and when it starts over.
  private available: number | undefined;
  private limit: number | undefined;
  private resetAt = 0;
  // AIMD mode: requests a second (Infinity: not pacing), and when the next request may go.
  private rate = Infinity;
  private nextAt = 0;
  private readonly sent: number[] = [];
  /** How many requests had to wait (tests read it). */
  readonly stats = { waited: 0 };

  constructor(options: PacerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.minRate = options.minRatePerSecond ?? 0.5;
  }

  /**
   * Waits, when it must, until one more request may go; then counts it as sent. No wait is longer than MAX_WAIT_MS,
   * and past `patienceMs` in all the request goes whatever the window says.
   */
  before(abortSignal?: AbortSignal, patienceMs = DEFAULT_PATIENCE_MS): Promise<void> | undefined {
    const waitMs = this.waitMs();
    if (waitMs <= 0) {
      this.take();
      return undefined;
    }
    this.stats.waited++;
    const until = this.clock.now() + patienceMs;
    const wait = (): Promise<void> => {
      const left = until - this.clock.now();
      const ms = Math.min(this.waitMs(), MAX_WAIT_MS, left);
      if (ms <= 0) {
        this.take();
        return Promise.resolve();
      }
      return sleep(ms, abortSignal).then(wait);
    };
    return wait();
  }

  /** The answer to a request `before()` let go (status 0: none came). */
  after(status: number, header?: HeaderOf, retryAfterMs?: number): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    const now = this.clock.now();
    if (retryAfterMs !== undefined && (status === 429 || status === 503))
      this.blockedUntil = Math.max(this.blockedUntil, now + Math.min(retryAfterMs, MAX_WAIT_MS));
    const state = header && rateStateOf(header, now);
    if (state) {
      if (state.limit !== undefined) this.limit = state.limit;
      if (state.resetSeconds !== undefined)
        this.resetAt = now + Math.min(state.resetSeconds * 1000, MAX_WAIT_MS);
      // What is left, less the requests of ours the tenant may not have counted yet.
      if (state.remaining !== undefined) this.available = state.remaining - this.inFlight;
      if (status === 429) this.available = 0;
      return;
    }
    if (status === 429) {
      const lastSecond = this.sent.filter((t) => t > now - 1000).length;
      this.rate = Math.max(this.minRate, Math.min(this.rate, Math.max(1, lastSecond)) / 2);
      this.nextAt = Math.max(this.nextAt, now + 1000 / this.rate);
    } else if (status >= 200 && status < 500 && Number.isFinite(this.rate)) {
      this.rate += 1 / this.rate;
      // Well past any rate seen refused: stop pacing.
      if (this.rate > 1000) this.rate = Infinity;
    }
  }

  private waitMs(): number {
    const now = this.clock.now();
    let wait = this.blockedUntil - now;
    if (this.available !== undefined && this.available <= 0) {
      if (now >= this.resetAt)
        this.available = this.limit ?? 1; // a new window; its first answer says more
      else wait = Math.max(wait, this.resetAt - now);
    }
    if (Number.isFinite(this.rate)) wait = Math.max(wait, this.nextAt - now);
    return wait;
  }

  private take(): void {
    this.inFlight++;
    if (this.available !== undefined) this.available--;
    const now = this.clock.now();
    if (Number.isFinite(this.rate)) this.nextAt = Math.max(this.nextAt, now) + 1000 / this.rate;
    // The last second's sends: where the rate starts from at a 429 without headers.
    this.sent.push(now);
    while (this.sent[0] <= now - 1000) this.sent.shift();
  }
}
