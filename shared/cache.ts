import type { Clock } from './clock';

/**
 * A value read at most once per `ms` (by `clock`), one read at a time: callers in between share the read in flight
 * or its result. A failed read is not kept, so the next call tries again; a clock moved backwards reads again.
 */
export function keptFor<T>(ms: number, clock: Clock, read: () => Promise<T>): () => Promise<T> {
  let entry: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = clock.now();
    if (!entry || now - entry.at >= ms || now < entry.at) {
      const value = read();
      const mine = { at: now, value };
      entry = mine;
      value.catch(() => {
        if (entry === mine) entry = undefined;
      });
    }
    return entry.value;
  };
}
