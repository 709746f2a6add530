/**
 * Reads one item ahead: the next page is being fetched while the caller writes this one. Exactly one item is
 * buffered, so memory stays bounded however fast the source is.
 */
export async function* prefetch<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  let pending = it.next();
  // The read ahead may fail while the caller is busy: keep that from being an unhandled rejection.
  pending.catch(() => undefined);
  try {
    for (;;) {
      const current = await pending;
      if (current.done) return;
      pending = it.next();
      pending.catch(() => undefined);
      yield current.value;
    }
  } finally {
    await it.return?.();
  }
}
