/** What both stores of the sync's state name and read alike: object names, and snapshot chunks gathered. */
/** Object names under a tenant's prefix, the same in both stores. */
// Not gzipped: half of each entry is a hash, which does not compress, and reading a gzip means holding the
// compressed and the whole inflated snapshot at once; plain, it is read straight into one buffer of its size.
export const snapshotLeaf = (stream: string) => `${encodeURIComponent(stream)}.snapshot`;
export const checkpointLeaf = (stream: string) => `${encodeURIComponent(stream)}.checkpoint`;

export const enoent = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** A snapshot blob's blocks. */
export const SNAPSHOT_BLOCK_BYTES = 4 * 1024 * 1024;

/**
 * The chunks gathered into pieces of `bytes` (the last smaller): each chunk is copied before the next is asked for, so
 * its source may reuse its memory. `'reuse'`: every piece is the same buffer, valid until the next is asked for. Else
 * each piece is a buffer of its own, for a consumer that holds it, taken from `spare` — where the consumer gives back
 * the pieces it is done with — when one is there.
 */
export async function* gathered(
  chunks: AsyncIterable<Buffer>,
  bytes: number,
  spare: 'reuse' | Buffer[],
): AsyncGenerator<Buffer> {
  const next = () => (spare === 'reuse' ? undefined : spare.pop()) ?? Buffer.allocUnsafe(bytes);
  let piece = next();
  let used = 0;
  for await (const chunk of chunks)
    for (let at = 0; at < chunk.length;) {
      const n = chunk.copy(piece, used, at);
      used += n;
      at += n;
      if (used < bytes) continue;
      yield piece;
      used = 0;
      if (spare !== 'reuse') piece = next();
    }
  if (used) yield piece.subarray(0, used);
}
