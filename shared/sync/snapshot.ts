import { createHash } from 'node:crypto';
import { CONTENT_HASH_BYTES } from './fingerprint';
import { fnv1a32, murmur3_32 } from './hash';

/**
 * Entries: [u16 id length, its top bit the "missing once" flag][id utf8][16-byte hash]. The flag marks a record an
 * offset- or page-paged pass without a total did not see: it is reported deleted only when the next pass misses it
 * too (docs/sync.md). So an id holds at most 32 KiB.
 */
export const MAX_ID_BYTES = 0x7fff;
const MISSING = 0x8000;

const idLength = (bytes: Buffer, at: number) => bytes.readUInt16BE(at) & MAX_ID_BYTES;
/** Where the entry that starts at `at` ends: its length field, its id, its hash. */
const entryEnd = (bytes: Buffer, at: number) => at + 2 + idLength(bytes, at) + CONTENT_HASH_BYTES;

/** What a stored snapshot says about the pass that made it, ahead of its entries. */
export interface SnapshotMeta {
  /** The stream definition the pass read with (shared/sync/passes.ts): another one means a full pass. */
  catalog?: string;
  /** The greatest "changed at" an incremental stream's records held: where the next incremental pass starts. */
  highWater?: string;
  /** When the last full pass of an incremental stream began, by the app's clock. */
  fullPassAt?: string;
  /** The last incremental pass found the server's newest-first order not kept: the next pass is a full one. */
  fullNext?: boolean;
  /**
   * A page size learnt from the tenant's refusals (shared/graphql/limits.ts): later passes start there, until a day
   * after `since` (when the tenant last refused more), when a pass tries the stream's own size again.
   */
  pageSize?: { size: number; limit: string; since?: string };
}

// 'TISN' then a u32 length and the JSON.
const MAGIC = Buffer.from('TISN');

/** Stored entries cut short (a write that died part-way, or a damaged file). */
export class SnapshotTruncated extends Error {
  constructor() {
    super('snapshot is truncated');
  }
}

/**
 * A stored snapshot read as it streams: its header, then its entries in chunks of whole entries, never the whole
 * of it in memory. Once read to the end, `digest` identifies the bytes (what a pass records it started from).
 */
export class StoredSnapshot {
  meta: SnapshotMeta = {};
  private readonly hash = createHash('sha256');
  private read?: string;

  constructor(private readonly chunks: AsyncIterable<Buffer> | undefined) {}

  /** 'none' when there was no snapshot; a digest of its bytes once `entries()` has been read to the end. */
  get digest(): string {
    if (!this.chunks) return 'none';
    if (this.read === undefined) throw new Error('the snapshot has not been read to its end');
    return this.read;
  }

  async *entries(): AsyncGenerator<Buffer> {
    if (!this.chunks) return;
    let head: Buffer | undefined = Buffer.alloc(0); // the bytes read before the header is complete
    let cut = Buffer.alloc(0); // an entry cut between two chunks
    const split = function* (bytes: Buffer): Generator<Buffer> {
      let at = 0;
      // Only an entry cut between two chunks is joined: the chunks' other bytes are yielded as views.
      while (cut.length && at < bytes.length) {
        const want = cut.length < 2 ? 2 : entryEnd(cut, 0);
        const take = Math.min(want - cut.length, bytes.length - at);
        cut = Buffer.concat([cut, bytes.subarray(at, at + take)]);
        at += take;
        if (cut.length >= 2 && cut.length === entryEnd(cut, 0)) {
          yield cut;
          cut = Buffer.alloc(0);
        }
      }
      let end = at;
      while (end + 2 <= bytes.length && entryEnd(bytes, end) <= bytes.length) end = entryEnd(bytes, end);
      if (end > at) yield bytes.subarray(at, end);
      if (end < bytes.length) cut = Buffer.concat([cut, bytes.subarray(end)]);
    };
    for await (const chunk of this.chunks) {
      this.hash.update(chunk);
      if (head) {
        head = Buffer.concat([head, chunk]);
        const body = this.header(head, false);
        if (body === undefined) continue;
        const rest = head.subarray(body);
        head = undefined;
        yield* split(rest);
      } else yield* split(chunk);
    }
    if (head) yield* split(head.subarray(this.header(head, true)));
    // Named even when cut short: a pass that starts over records what it started from.
    this.read = this.hash.digest('hex').slice(0, 32);
    if (cut.length) throw new SnapshotTruncated();
  }

  /** Where the entries start, once the bytes so far say; a snapshot written before headers is all entries. */
  private header(head: Buffer, final: boolean): number | undefined {
    // A snapshot without it (written before there was one) is all entries: its first id would have to be 21 577
    // bytes long and start with "SN" to be taken for one.
    if (head.length < 8)
      return head.length >= 4 && !head.subarray(0, 4).equals(MAGIC) ? 0 : final ? 0 : undefined;
    if (!head.subarray(0, 4).equals(MAGIC)) return 0;
    const length = head.readUInt32BE(4);
    if (head.length < 8 + length) return final ? head.length : undefined;
    try {
      this.meta = JSON.parse(head.toString('utf8', 8, 8 + length)) as SnapshotMeta;
    } catch {
      // unreadable: the next pass is a full one, which writes a good header
    }
    return 8 + length;
  }
}

export function snapshotHeader(meta: SnapshotMeta): Buffer {
  const json = Buffer.from(JSON.stringify(meta));
  const head = Buffer.alloc(8);
  MAGIC.copy(head);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json]);
}

/**
 * What a pass needs in memory of the previous snapshot: each entry's fingerprints, not its bytes. A stream's state
 * is stored as entries of [u16 id length][id utf8][16-byte hash], one storage object (read twice a pass, never
 * once per record); a full pass holds this index of it beside everything else, so it is typed arrays only:
 * 16 bytes an entry (64 bits of the id, the first 64 of its hash) and a 6.7 MB table at a million — 23 MB, where the
 * entries themselves are 29 MB with the sandbox's short ids and twice that with UUIDs. The ids and whole hashes
 * are read again, streamed from storage, when the pass ends (deletions and what it keeps): `StoredSnapshot`.
 * An entry is named by its number in stored order. Two ids sharing 64 bits (one chance in 2^64 a pair) would be
 * taken for one, and a new content whose hash kept its first 64 bits for unchanged.
 */
export class SnapshotIndex {
  count = 0;
  /**
   * Indexed entries this pass has not seen yet. None left: a pass's end need not read the snapshot again — there
   * is nothing to delete or keep (a full pass where nothing was deleted: most of them).
   */
  unseen = 0;
  /**
   * Four words an entry: the id's two 32-bit hashes, then the first 8 bytes of its content hash; in pages of 2^16
   * entries (1 MiB), so that the index grows as the snapshot streams in without a copy of what it holds so far.
   */
  private readonly pages: Uint32Array[] = [];
  /** Open addressing, each slot an entry number + 1. */
  private table = new Int32Array(0);
  /** An entry's state in this pass: UNSEEN, SEEN, or SECOND — an id stored twice, whose later entry is ignored. */
  private state = new Uint8Array(0);

  /** The index of entries held in one buffer (a test's, or a first page's). */
  static of(entries: Buffer | undefined): SnapshotIndex {
    const index = new SnapshotIndex();
    if (entries) index.add(entries);
    return index.seal();
  }

  /** Adds a chunk of whole entries, in stored order (before `seal`). */
  add(entries: Buffer): void {
    for (let at = 0; at < entries.length;) {
      const len = idLength(entries, at);
      const end = at + 2 + len + CONTENT_HASH_BYTES;
      if (end > entries.length) throw new SnapshotTruncated();
      const k = this.count++;
      if ((k & PAGE_MASK) === 0) this.pages.push(new Uint32Array(4 << PAGE_BITS));
      const page = this.pages[k >>> PAGE_BITS];
      const p = (k & PAGE_MASK) << 2;
      page[p] = fnv1a32(entries, at + 2, len);
      page[p + 1] = murmur3_32(entries, at + 2, len);
      page[p + 2] = entries.readUInt32LE(at + 2 + len);
      page[p + 3] = entries.readUInt32LE(at + 6 + len);
      at = end;
    }
  }

  /** Every entry added: the table is built. */
  seal(): this {
    // Open addressing at a load of at most 0.6 (0.7 cost a third more CPU per lookup): sized to the count, as a
    // power of two would double the table just past 2^20 entries.
    this.table = new Int32Array(this.count === 0 ? 0 : Math.ceil(this.count / LOAD) + 1);
    this.state = new Uint8Array(this.count);
    this.unseen = 0;
    for (let k = 0; k < this.count; k++) {
      const page = this.pages[k >>> PAGE_BITS];
      const p = (k & PAGE_MASK) << 2;
      const slot = this.slotOf(page[p], page[p + 1]);
      // An id the server listed twice in one pass is stored twice; only its first entry is indexed, and the
      // other is neither reported as deleted nor kept.
      if (this.table[slot] !== 0) this.state[k] = SECOND;
      else {
        this.table[slot] = k + 1;
        this.unseen++;
      }
    }
    return this;
  }

  /** The slot holding the id with these hashes, or the empty slot where it would go. */
  private slotOf(a: number, b: number): number {
    for (let slot = this.home(a); ; slot = this.next(slot)) {
      const v = this.table[slot];
      if (v === 0) return slot;
      const page = this.pages[(v - 1) >>> PAGE_BITS];
      const p = ((v - 1) & PAGE_MASK) << 2;
      if (page[p] === a && page[p + 1] === b) return slot;
    }
  }

  /** (hash × size) / 2^32: an id's first slot, for a table of any size. */
  private home(a: number): number {
    return (a * this.table.length * 2.3283064365386963e-10) | 0;
  }

  private next(slot: number): number {
    return slot + 1 === this.table.length ? 0 : slot + 1;
  }

  /** The number of an id's entry, or -1. */
  find(id: Buffer): number {
    if (this.count === 0) return -1;
    return this.table[this.slotOf(fnv1a32(id, 0, id.length), murmur3_32(id, 0, id.length))] - 1;
  }

  /** Whether the entry's hash begins with this change id's (64 bits compared, nothing allocated). */
  hasChangeId(entry: number, changeId: string): boolean {
    SCRATCH.write(changeId, 0, 8, 'hex');
    const page = this.pages[entry >>> PAGE_BITS];
    const p = (entry & PAGE_MASK) << 2;
    return page[p + 2] === SCRATCH.readUInt32LE(0) && page[p + 3] === SCRATCH.readUInt32LE(4);
  }

  /** Marks an entry as present in this run; false when it was already marked (a duplicate). */
  mark(entry: number): boolean {
    if (this.state[entry] !== UNSEEN) return false;
    this.state[entry] = SEEN;
    this.unseen--;
    return true;
  }

  /**
   * The entries this pass has not seen, from the stored snapshot read again (`chunks`, whole entries, the ones the
   * index was built from): after a complete pass, the deleted records. In stored order.
   */
  async *unseenEntries(chunks: AsyncIterable<Buffer>): AsyncGenerator<UnseenEntry> {
    let k = 0;
    for await (const chunk of chunks)
      for (let at = 0; at < chunk.length; at = entryEnd(chunk, at), k++) {
        this.check(k);
        if (this.state[k] !== UNSEEN) continue;
        const len = idLength(chunk, at);
        // Copies: a chunk may be reused for the next one (shared/sync/file-state.ts).
        yield {
          id: chunk.toString('utf8', at + 2, at + 2 + len),
          hash: Buffer.from(chunk.subarray(at + 2 + len, at + 2 + len + CONTENT_HASH_BYTES)),
          missing: (chunk.readUInt16BE(at) & MISSING) !== 0,
          bytes: Buffer.from(chunk.subarray(at, entryEnd(chunk, at))),
        };
      }
    this.check(k, true);
  }

  /**
   * The unseen entries as they are stored, in runs of adjacent ones, each run a view of the chunk read (valid until
   * the next run is asked for: a chunk may be reused for the next one): an incremental pass keeps nearly every entry,
   * and neither a Buffer per entry nor a copy per run may cost it memory.
   */
  async *unseenRuns(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    let k = 0;
    for await (const chunk of chunks) {
      let from = -1;
      let at = 0;
      for (; at < chunk.length; at = entryEnd(chunk, at), k++) {
        this.check(k);
        if (this.state[k] === UNSEEN) {
          if (from < 0) from = at;
        } else if (from >= 0) {
          yield chunk.subarray(from, at);
          from = -1;
        }
      }
      if (from >= 0) yield chunk.subarray(from, at);
    }
    this.check(k, true);
  }

  /** The snapshot read again must be the one indexed: as many entries (its digest is checked by its reader). */
  private check(k: number, end = false): void {
    if (end ? k !== this.count : k >= this.count)
      throw new Error(`the snapshot read again does not have the ${this.count} entries it had`);
  }
}

/** A copy of an entry with its "missing once" flag set: a record a pass did not see, kept to be confirmed. */
export function markedMissing(entry: Buffer): Buffer {
  const copy = Buffer.from(entry);
  copy.writeUInt16BE(copy.readUInt16BE(0) | MISSING, 0);
  return copy;
}

/** The previous snapshot as a pass sees it: its index, and its entries read again (streamed) when the pass ends. */
export interface PreviousSnapshot {
  index: SnapshotIndex;
  /** The entries the index was built from, in chunks of whole entries; fails if they are not the same. */
  again(): AsyncIterable<Buffer>;
}

/** Entries held in one buffer as a previous snapshot (a test's, or one already in memory): read again from it. */
export function inMemory(entries: Buffer | undefined): PreviousSnapshot {
  return {
    index: SnapshotIndex.of(entries),
    async *again() {
      if (entries) yield entries;
    },
  };
}

/** A stored entry a pass did not see: its id, its 16-byte hash, its "missing once" flag and its bytes. */
export interface UnseenEntry {
  id: string;
  hash: Buffer;
  missing: boolean;
  bytes: Buffer;
}

const LOAD = 0.6;
const PAGE_BITS = 16;
const PAGE_MASK = (1 << PAGE_BITS) - 1;
const UNSEEN = 0;
const SEEN = 1;
const SECOND = 2;
/** A change id's first bytes, to compare with an entry's: one buffer for every comparison. */
const SCRATCH = Buffer.alloc(8);

/** Entries in the snapshot format, one page at a time: what a page's checkpoint record carries. */
export class EntryWriter {
  private buf = Buffer.allocUnsafe(16 * 1024);
  private used = 0;

  /** An id and its hash, written from the change id (hex) that is those 128 bits. */
  add(id: Buffer, changeId: string): void {
    const need = 2 + id.length + CONTENT_HASH_BYTES;
    if (this.used + need > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + need));
      this.buf.copy(bigger, 0, 0, this.used);
      this.buf = bigger;
    }
    this.buf.writeUInt16BE(id.length, this.used);
    id.copy(this.buf, this.used + 2);
    this.buf.write(changeId, this.used + 2 + id.length, CONTENT_HASH_BYTES, 'hex');
    this.used += need;
  }

  /** The entries added since the last call, copied out (the buffer is reused). */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.used));
    this.used = 0;
    return out;
  }
}

/** Calls `visit` for each [id, hash] entry of a buffer in the snapshot format. */
export function forEachEntry(bytes: Buffer, visit: (id: Buffer, hash: Buffer) => void): void {
  for (let at = 0; at < bytes.length;) {
    const len = idLength(bytes, at);
    const end = at + 2 + len + CONTENT_HASH_BYTES;
    if (end > bytes.length) throw new SnapshotTruncated();
    visit(bytes.subarray(at + 2, at + 2 + len), bytes.subarray(at + 2 + len, end));
    at = end;
  }
}
