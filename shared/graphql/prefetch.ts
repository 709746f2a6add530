/**
 * Reads ahead of the caller: while it writes one page, the next ones are fetched, so the API is never left
 * idle waiting for us. At most `ahead` pages wait in the buffer, so memory stays bounded however fast the
 * source is. Pages are requested one at a time (each needs the cursor of the one before).
 */
export async function* prefetch<T>(source: AsyncIterable<T>, ahead = 2): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const buffer: Array<IteratorResult<T>> = [];
  let failure: { error: unknown } | undefined;
  let pumping: Promise<void> = Promise.resolve();
  let active = false;
  let wake: (() => void) | undefined;
  let stopped = false;

  const pump = async () => {
    active = true;
    try {
      while (!stopped && buffer.length < ahead) {
        const r = await it.next();
        buffer.push(r);
        wake?.();
        if (r.done) return;
      }
    } catch (error) {
      failure = { error };
      wake?.();
    } finally {
      active = false;
    }
  };
  const ensurePump = () => {
    if (!active && !failure && !buffer.some((r) => r.done)) pumping = pump();
  };

  try {
    for (;;) {
      ensurePump();
      while (!buffer.length && !failure) await new Promise<void>((r) => (wake = r));
      wake = undefined;
      const next = buffer.shift();
      if (!next) throw (failure as { error: unknown }).error;
      if (next.done) return;
      ensurePump(); // room in the buffer again: fetch on while the caller works
      // One turn of the event loop before handing the page over: the next request is only on the wire once
      // fetch's promise chain has run, and the caller's synchronous work on this page would otherwise hold
      // it back — pages would be fetched after each other's processing, not during it (bench/sync: ×1.2).
      await new Promise<void>((r) => setImmediate(r));
      yield next.value;
    }
  } finally {
    stopped = true;
    await pumping;
    await it.return?.();
  }
}
