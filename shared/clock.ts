/** Everything that reads time takes a Clock, so tests can move it. Milliseconds since the epoch. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * A clock that runs with real time plus an offset that tests can advance — or, frozen, moves only when
 * advanced (so a test's timing cannot depend on how fast the machine is).
 */
export class OffsetClock implements Clock {
  private offsetMs = 0;
  private frozenAt?: number;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return (this.frozenAt ?? this.base.now()) + this.offsetMs;
  }
  /** Stops (or restarts) the real-time part. Restarted, it catches up with real time: never backwards. */
  freeze(frozen: boolean): void {
    this.frozenAt = frozen ? (this.frozenAt ?? this.base.now()) : undefined;
  }
  advanceSeconds(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
  get offset(): number {
    return this.offsetMs;
  }
  /** Restores an offset saved earlier (the local host keeps it across restarts). */
  setOffset(ms: number): void {
    this.offsetMs = ms;
  }
  reset(): void {
    this.offsetMs = 0;
    this.frozenAt = undefined;
  }
}

export const nowSeconds = (clock: Clock): number => Math.floor(clock.now() / 1000);

/**
 * The clock the app runs on. In Azure that is real time; the local host registers its own movable clock
 * here before it loads the app, so tests that move the host's time move the app's with it.
 */
const HOST_CLOCK = Symbol.for('tenant-integrations.host-clock');
type WithHostClock = typeof globalThis & { [HOST_CLOCK]?: Clock };
export const appClock: Clock = {
  now: () => ((globalThis as WithHostClock)[HOST_CLOCK] ?? systemClock).now(),
};
export function registerHostClock(clock: Clock): void {
  (globalThis as WithHostClock)[HOST_CLOCK] = clock;
}
