import { createHash } from 'node:crypto';
import type { StreamDefinition } from '../streams';
import type { Unseen } from './change-detector';
import type { SnapshotMeta } from './snapshot';

/**
 * Which kind of pass a stream gets, and what the end of it may conclude about the records it did not see
 * (docs/sync.md, "Incremental passes" and "Offset and page pagination").
 */

export type PassKind = 'full' | 'incremental';

export interface PassPolicy {
  /** An incremental stream gets a full pass at least this often (SYNC_FULL_PASS_EVERY). */
  fullPassEveryMs: number;
  /** How far before the last high-water mark an incremental pass starts (SYNC_INCREMENTAL_OVERLAP_SECONDS). */
  overlapMs: number;
}

export const DEFAULT_PASS_POLICY: PassPolicy = { fullPassEveryMs: 24 * 3600_000, overlapMs: 300_000 };

/** The stream definition a snapshot was made with: another one (fields, paging, key) means a full pass. */
export function catalogDigest(s: StreamDefinition): string {
  return createHash('sha256')
    .update(
      // A child stream's parent only where there is one: the digests of streams defined before stay as they were.
      JSON.stringify([
        s.document,
        s.pagination,
        s.paths,
        s.idPath,
        s.incremental ?? null,
        s.pageSize,
        ...(s.parent ? [s.parent] : []),
        // What leaves of a personal field is part of the definition: a change reads every record again (a full pass).
        ...(s.personal ? [s.personal] : []),
      ]),
    )
    .digest('hex')
    .slice(0, 16);
}

/**
 * A full pass unless the stream reads incrementally and everything an incremental pass needs is there and fresh:
 * a snapshot from this very definition, a high-water mark, and a full pass less than `fullPassEveryMs` ago (by
 * the app's clock; one that jumped backwards counts as long ago). `forceFull` is `sync --full-pass`.
 */
export function passFor(
  stream: StreamDefinition,
  stored: { meta: SnapshotMeta; exists: boolean },
  options: { nowMs: number; policy: PassPolicy; forceFull?: boolean },
): { pass: 'full' } | { pass: 'incremental'; since: string } {
  const { meta } = stored;
  if (!stream.incremental || options.forceFull || !stored.exists) return { pass: 'full' };
  if (meta.catalog !== catalogDigest(stream) || !meta.highWater || !meta.fullPassAt || meta.fullNext)
    return { pass: 'full' };
  const last = Date.parse(meta.fullPassAt);
  const age = options.nowMs - last;
  if (Number.isNaN(last) || age < 0 || age >= options.policy.fullPassEveryMs) return { pass: 'full' };
  const high = Date.parse(meta.highWater);
  if (Number.isNaN(high)) return { pass: 'full' };
  return { pass: 'incremental', since: new Date(high - options.policy.overlapMs).toISOString() };
}

/**
 * What the end of a complete pass may conclude about records it did not see. An incremental pass reads only
 * changes: it concludes nothing. A cursor or single-answer listing is complete: they were deleted. An offset or
 * page listing can skip a record when the collection changes while it is read: with a total that held still and
 * matched what was read, nothing was skipped; with a repeated record or a total that moved, something was, so
 * nothing is concluded; with no total to check against, a record must be missed by two passes in a row.
 */
export function unseenFor(
  stream: StreamDefinition,
  pass: PassKind,
  listing: { repeated: number; total?: { min: number; max: number }; read: number },
): Unseen {
  if (pass === 'incremental') return 'keep';
  // A cursor or token listing gives each record once (a token is the next key of the server's own scan).
  if (['cursor', 'token', 'none'].includes(stream.pagination)) return 'delete';
  if (listing.repeated > 0) return 'keep';
  if (!listing.total) return 'confirm';
  return listing.total.min === listing.total.max && listing.total.max === listing.read ? 'delete' : 'keep';
}

/** The smallest and largest total the pages of a listing reported. */
export const widen = (range: { min: number; max: number } | undefined, total: number | undefined) =>
  total === undefined
    ? range
    : { min: Math.min(range?.min ?? total, total), max: Math.max(range?.max ?? total, total) };
