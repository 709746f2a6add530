import { IntegrationError, UpstreamError } from '../errors';
import { change, noCounts, type Change, type StreamCounts } from '../changes';
import { keyGetter, pathGetter } from '../streams/paths';
import { keyPaths } from '../streams';
import { changeIdFor, deletionIdOf, recordJson } from './fingerprint';
import {
  EntryWriter,
  forEachEntry,
  inMemory,
  markedMissing,
  MAX_ID_BYTES,
  SnapshotIndex,
  type PreviousSnapshot,
} from './snapshot';
import { fnv1a32 } from './hash';

/** What the end of a pass does with the records it did not see (shared/sync/passes.ts). */
export type Unseen =
  /** Deleted: a complete pass that can be trusted to have seen everything. */
  | 'delete'
  /** Deleted when the last pass missed them too; else kept, marked missing once (offset or page, no total). */
  | 'confirm'
  /** Kept as they were: an incremental pass (it reads only changes), or one whose collection moved under it. */
  | 'keep';

export interface ChangeDetectorOptions {
  /** Inside a record, its key: one path or several (a composite key); none: the record's content is its key. */
  idPath: string | string[];
  /** Remember every id of the pass, so one listed twice counts once (offset and page pagination). */
  repeats?: boolean;
  /**
   * Remember every id of the pass, and fail on one listed twice (a full pass of a cursor or single-answer listing,
   * which lists each record once): two records under one key would otherwise be merged without a word.
   */
  uniqueKeys?: boolean;
  /** The record field whose greatest value the pass keeps (an incremental stream's "changed at"). */
  highWaterField?: string;
}

/**
 * Compares one pass over a stream with its previous snapshot: new id → created, other hash → updated,
 * absent at the end of a complete pass → deleted (as `Unseen` says). Only `finish()` — called after the last
 * page — yields deletions, so a pass that fails part-way can never delete anything.
 */
export class ChangeDetector {
  readonly counts: StreamCounts = noCounts();
  /** Records listed again in this pass (an offset or page collection that moved while it was read). */
  repeated = 0;
  private highWaterMs = -Infinity;

  /** The greatest `highWaterField` value seen in this pass, as an ISO date-time. */
  get highWater(): string | undefined {
    // Formatted when asked (once a page), not at each new greatest value: in a collection read in order of change
    // that is every record, and formatting cost three times the parsing.
    return this.highWaterMs === -Infinity ? undefined : new Date(this.highWaterMs).toISOString();
  }
  private previous: SnapshotIndex;
  private readonly again: () => AsyncIterable<Buffer>;
  private readonly pageEntries = new EntryWriter();
  private readonly ids?: IdSet;
  /**
   * `uniqueKeys`: the ids of this pass the previous snapshot does not hold (those it holds are marked there), by a
   * 32-bit fingerprint; an id whose fingerprint was met before is a suspect, counted in the pass's own entries when
   * the listing ends (`verifyKeys`) — so a key met twice fails the stream, and ids that only share a fingerprint
   * do not. Four bytes an id, in segments that never grow by copying (docs/benchmarks.md, "Sync").
   */
  private readonly newKeys?: KeySet;
  /** Ids whose fingerprint was met before in this pass: checked by `verifyKeys` when the listing ends. */
  readonly suspects = new Set<string>();

  /** `previous`: the last pass's snapshot, as an index and its entries to read again, or its entries in memory. */
  constructor(
    readonly stream: string,
    previous: PreviousSnapshot | Buffer | undefined,
    private readonly options: ChangeDetectorOptions,
  ) {
    const { index, again } =
      previous === undefined || Buffer.isBuffer(previous) ? inMemory(previous) : previous;
    this.previous = index;
    this.again = again;
    this.keyed = keyPaths(options).length > 0;
    // Known by content, identical records are one: every id of the pass is remembered, so a repeat counts once.
    if (options.repeats || !this.keyed) this.ids = new IdSet();
    else if (options.uniqueKeys) this.newKeys = new KeySet();
    this.keyAt = keyGetter(keyPaths(options));
    this.highWaterAt = pathGetter(options.highWaterField ?? '');
  }

  private readonly keyed: boolean;
  // Paths split once: these run for every record.
  private readonly keyAt: (record: unknown) => string | undefined;
  private readonly highWaterAt: (record: unknown) => unknown;

  /** How many records the last complete pass saw: what a progress bar can aim at. */
  get expected(): number {
    return this.previous.count;
  }

  private idOf(record: unknown, json: string): string {
    if (!this.keyed) return contentKey(json);
    const id = this.keyAt(record);
    if (id === undefined)
      throw new UpstreamError(
        'upstream_malformed',
        this.stream,
        `a ${this.stream} record has no ${keyPaths(this.options).join(' + ')}`,
      );
    return id;
  }

  private noteHighWater(record: unknown, id: string): void {
    const field = this.options.highWaterField as string;
    const value = this.highWaterAt(record);
    const ms = typeof value === 'string' ? Date.parse(value) : NaN;
    if (Number.isNaN(ms))
      throw new UpstreamError(
        'upstream_malformed',
        this.stream,
        `${this.stream} record ${JSON.stringify(id)}: ${field} is not a date-time, so the stream cannot be read incrementally (its incremental.field)`,
      );
    if (ms > this.highWaterMs) this.highWaterMs = ms;
  }

  /** The changes in one page of records (unchanged ones produce nothing). */
  page(records: unknown[]): Change[] {
    const out: Change[] = [];
    for (const record of records) {
      const json = recordJson(record);
      const id = this.idOf(record, json);
      const idBytes = Buffer.from(id);
      if (idBytes.length > MAX_ID_BYTES)
        throw new UpstreamError(
          'upstream_malformed',
          this.stream,
          `a ${this.stream} id is longer than 32 KiB`,
        );
      if (this.options.highWaterField) this.noteHighWater(record, id);
      const changeId = changeIdFor(this.stream, id, json);
      const i = this.previous.find(idBytes);
      if (this.ids && !this.ids.add(idBytes)) {
        // Keyed: listed again (the collection moved under the offsets). By content: an identical record. Once.
        if (this.keyed) this.repeated++;
        else {
          this.counts.read++;
          this.counts.duplicates = (this.counts.duplicates ?? 0) + 1;
        }
        continue;
      }
      if (this.newKeys && i < 0 && !this.newKeys.add(idBytes)) this.suspect(id);
      this.counts.read++;
      if (i >= 0 && !this.previous.mark(i)) {
        if (this.newKeys) throw this.duplicate(id);
        continue; // the same id twice in one pass: counted once
      }
      this.pageEntries.add(idBytes, changeId);
      if (i < 0) {
        this.counts.created++;
        out.push(change(this.stream, 'created', id, changeId, record, json));
      } else if (!this.previous.hasChangeId(i, changeId)) {
        this.counts.updated++;
        out.push(change(this.stream, 'updated', id, changeId, record, json));
      } else this.counts.unchanged++;
    }
    return out;
  }

  private suspect(id: string): void {
    // Far more than fingerprints alone would share (~120 at 1 M ids): the key repeats, whatever the count says.
    if (this.suspects.size >= 100_000) throw this.duplicate(id);
    this.suspects.add(id);
  }

  private duplicate(id: string): IntegrationError {
    const key = keyPaths(this.options).join(' + ');
    return new IntegrationError(
      'duplicate_key',
      `stream ${this.stream}: two records of this pass have ${key} ${JSON.stringify(id).slice(0, 200)}, so ${key} is not each record's own key and one would be lost; the pass stops before it is sealed. \`tenant-integrations discover\` proposes the record's own key: set it as the stream's idPath in SYNC_STREAMS_FILE`,
    );
  }

  /**
   * After the listing, before anything is sealed (`uniqueKeys`): each suspect counted in the pass's entries (its
   * checkpoint log); one met twice fails the stream with `duplicate_key`.
   */
  async verifyKeys(entries: AsyncIterable<Buffer>): Promise<void> {
    if (!this.suspects.size) return;
    const seen = new Set<string>();
    for await (const chunk of entries) {
      let twice: string | undefined;
      forEachEntry(chunk, (id) => {
        const key = id.toString();
        if (twice || !this.suspects.has(key)) return;
        if (seen.has(key)) twice = key;
        seen.add(key);
      });
      if (twice) throw this.duplicate(twice);
    }
  }

  /** The entries the last page adds to the next snapshot: what its checkpoint record keeps. */
  takePageEntries(): Buffer {
    return this.pageEntries.take();
  }

  /**
   * Carries on from a checkpoint: the counts and high-water mark so far, and the entries already seen in this
   * pass (streamed from the checkpoint log), so records seen before the resume are not reported as deleted.
   */
  async resume(
    progress: { counts: StreamCounts; repeated?: number; highWater?: string },
    seen: AsyncIterable<Buffer>,
  ): Promise<void> {
    for await (const entries of seen)
      forEachEntry(entries, (id) => {
        this.ids?.add(id);
        const i = this.previous.find(id);
        if (i >= 0) this.previous.mark(i);
        else if (this.newKeys && !this.newKeys.add(id)) this.suspect(id.toString());
      });
    Object.assign(this.counts, progress.counts);
    this.repeated = progress.repeated ?? 0;
    const resumedMs = progress.highWater ? Date.parse(progress.highWater) : NaN;
    if (!Number.isNaN(resumedMs)) this.highWaterMs = resumedMs;
  }

  /**
   * After the last page: the deletions, as `unseen` says (the previous entries read again). The entries kept come
   * from `kept()`.
   */
  async finish(unseen: Unseen): Promise<Change[]> {
    const deletions: Change[] = [];
    if (unseen !== 'keep' && this.previous.unseen)
      for await (const entry of this.previous.unseenEntries(this.again())) {
        if (unseen === 'confirm' && !entry.missing) continue;
        deletions.push(change(this.stream, 'deleted', entry.id, deletionIdOf(entry.hash)));
      }
    this.counts.deleted = deletions.length;
    this.unseen = unseen;
    if (unseen === 'delete') this.previous = SnapshotIndex.of(undefined); // nothing of it is kept: free it now
    return deletions;
  }

  private unseen: Unseen = 'delete';

  /**
   * The previous snapshot's entries this pass did not see and did not delete, for the next snapshot after the
   * pass's own: every one when kept, each marked missing once when waiting to be confirmed. Then lets it go.
   */
  async *kept(): AsyncGenerator<Buffer> {
    const previous = this.previous;
    this.previous = SnapshotIndex.of(undefined);
    if (this.unseen === 'delete' || previous.unseen === 0) return;
    // Kept as they are (an incremental pass): the stored bytes themselves, flags unchanged.
    if (this.unseen === 'keep') {
      yield* previous.unseenRuns(this.again());
      return;
    }
    const chunk: Buffer[] = [];
    let size = 0;
    for await (const { missing, bytes } of previous.unseenEntries(this.again())) {
      if (missing) continue; // missed twice: deleted
      const entry = markedMissing(bytes);
      chunk.push(entry);
      size += entry.length;
      if (size >= 1 << 20) {
        yield Buffer.concat(chunk, size);
        chunk.length = 0;
        size = 0;
      }
    }
    if (size) yield Buffer.concat(chunk, size);
  }
}

/** A record without a key is known by its content: 128 bits of sha256 over its JSON, as hex. */
const contentKey = (json: string): string => changeIdFor('', '', json);

/**
 * The ids of one pass, as two 32-bit hashes each in an open-addressing table: 8 bytes a record at most half full,
 * where a Set of strings costs ten times that. Two different ids sharing both hashes (one chance in 2^64 a pair)
 * would count as one.
 */
class IdSet {
  private table = new Uint32Array(2 * 1024);
  private size = 0;

  add(id: Buffer): boolean {
    if ((this.size + 1) * 2 > this.table.length / 2) this.grow();
    return this.insert(this.table, fnv1a32(id) || 1, fnv1a32(id, 0, id.length, 0x01000193));
  }

  private insert(table: Uint32Array, a: number, b: number): boolean {
    const slots = table.length / 2;
    for (let slot = a & (slots - 1); ; slot = (slot + 1) & (slots - 1)) {
      const ta = table[2 * slot];
      if (ta === 0) {
        table[2 * slot] = a;
        table[2 * slot + 1] = b;
        if (table === this.table) this.size++;
        return true;
      }
      if (ta === a && table[2 * slot + 1] === b) return false;
    }
  }

  private grow(): void {
    const old = this.table;
    this.table = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0) this.insert(this.table, old[i], old[i + 1]);
  }
}

/**
 * Ids by a 32-bit fingerprint (fnv1a, never 0) in 64 open-addressing segments, each at most half full: ~8 bytes an id,
 * and a growth copies one segment, not the whole table. A fingerprint met before may be another id: the caller
 * checks (`ChangeDetector.verifyKeys`).
 */
class KeySet {
  private readonly segments = Array.from({ length: 64 }, () => ({ table: new Uint32Array(256), size: 0 }));

  /** False when this fingerprint was added before. */
  add(id: Buffer): boolean {
    const a = fnv1a32(id) || 1;
    const s = this.segments[a >>> 26];
    if ((s.size + 1) * 2 > s.table.length) {
      const old = s.table;
      s.table = new Uint32Array(old.length * 2);
      for (const v of old) if (v !== 0) KeySet.insert(s.table, v);
    }
    const added = KeySet.insert(s.table, a);
    if (added) s.size++;
    return added;
  }

  private static insert(table: Uint32Array, a: number): boolean {
    const mask = table.length - 1;
    for (let slot = a & mask; ; slot = (slot + 1) & mask) {
      if (table[slot] === 0) {
        table[slot] = a;
        return true;
      }
      if (table[slot] === a) return false;
    }
  }
}
