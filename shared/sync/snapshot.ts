import { CONTENT_HASH_BYTES } from './fingerprint';

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
}

// 'TISN' then a u32 length and the JSON. A snapshot without it (written before there was one) is all entries: its
// first id would have to be 21 577 bytes long and start with "SN" to be taken for one.
const MAGIC = Buffer.from('TISN');

/** A stored snapshot's header and entries. */
export function readSnapshotFile(bytes: Buffer | undefined): { meta: SnapshotMeta; entries?: Buffer } {
  if (!bytes) return { meta: {} };
  if (bytes.length < 8 || !bytes.subarray(0, 4).equals(MAGIC)) return { meta: {}, entries: bytes };
  const length = bytes.readUInt32BE(4);
  let meta: SnapshotMeta = {};
  try {
    meta = JSON.parse(bytes.toString('utf8', 8, 8 + length)) as SnapshotMeta;
  } catch {
    // unreadable: the next pass is a full one, which writes a good header
  }
  return { meta, entries: bytes.subarray(8 + length) };
}

export function snapshotHeader(meta: SnapshotMeta): Buffer {
  const json = Buffer.from(JSON.stringify(meta));
  const head = Buffer.alloc(8);
  MAGIC.copy(head);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json]);
}

/**
 * A stream's state, id → content hash, in one compact buffer: entries of [u16 id length][id utf8][16-byte hash].
 * A million records are ~29 MB of bytes and a 6.7 MB index, not a million JavaScript objects, and the whole state
 * is one storage object (one round trip per run, not one per record). A full pass holds it beside everything
 * else, so the index is one Int32Array: each slot holds an entry's byte offset + 1, negated once the entry is
 * seen in this pass. An entry is named by its slot.
 */
export class Snapshot {
  readonly count: number;
  private readonly table: Int32Array;
  private readonly duplicates: number[] = [];

  constructor(readonly bytes: Buffer = Buffer.alloc(0)) {
    let count = 0;
    for (let at = 0; at < bytes.length; count++) {
      at = entryEnd(bytes, at);
      if (at > bytes.length) throw new Error('snapshot is truncated');
    }
    this.count = count;
    // Open addressing at a load of at most 0.6 (0.7 cost a third more CPU per lookup): sized to the count, as a
    // power of two would double the table just past 2^20 entries.
    this.table = new Int32Array(count === 0 ? 0 : Math.ceil(count / LOAD) + 1);
    for (let o = 0; o < bytes.length; o = entryEnd(bytes, o)) {
      const len = idLength(bytes, o);
      let slot = this.home(bytes, o + 2, len);
      let duplicate = false;
      for (let v; (v = this.table[slot]) !== 0; slot = this.next(slot)) {
        const p = v - 1;
        if (
          idLength(bytes, p) === len &&
          bytes.compare(bytes, o + 2, o + 2 + len, p + 2, p + 2 + len) === 0
        ) {
          duplicate = true;
          break;
        }
      }
      // An id the server listed twice in one pass is stored twice; only its first entry is indexed, and the
      // other is neither reported as deleted nor kept.
      if (duplicate) this.duplicates.push(o);
      else this.table[slot] = o + 1;
    }
  }

  /** (hash × size) / 2^32: an id's first slot, for a table of any size. */
  private home(b: Buffer, start: number, length: number): number {
    return (fnv(b, start, length) * this.table.length * 2.3283064365386963e-10) | 0;
  }

  private next(slot: number): number {
    return slot + 1 === this.table.length ? 0 : slot + 1;
  }

  private offsetAt(slot: number): number {
    return Math.abs(this.table[slot]) - 1;
  }

  /** The slot of an id's entry, or -1. */
  find(id: Buffer): number {
    if (this.count === 0) return -1;
    for (let slot = this.home(id, 0, id.length); ; slot = this.next(slot)) {
      const v = this.table[slot];
      if (v === 0) return -1;
      const o = Math.abs(v) - 1;
      const len = idLength(this.bytes, o);
      if (len === id.length && this.bytes.compare(id, 0, len, o + 2, o + 2 + len) === 0) return slot;
    }
  }

  /** Whether the entry's hash is this change id's 128 bits (compared as bytes, nothing allocated). */
  hasChangeId(slot: number, changeId: string): boolean {
    const o = this.offsetAt(slot);
    const start = o + 2 + idLength(this.bytes, o);
    SCRATCH.write(changeId, 0, CONTENT_HASH_BYTES, 'hex');
    return this.bytes.compare(SCRATCH, 0, CONTENT_HASH_BYTES, start, start + CONTENT_HASH_BYTES) === 0;
  }

  hashAt(slot: number): Buffer {
    const o = this.offsetAt(slot);
    const start = o + 2 + idLength(this.bytes, o);
    return this.bytes.subarray(start, start + CONTENT_HASH_BYTES);
  }

  idAt(slot: number): string {
    const o = this.offsetAt(slot);
    return this.bytes.toString('utf8', o + 2, o + 2 + idLength(this.bytes, o));
  }

  /** The record was missing from the last pass already (an offset or page pass without a total). */
  missingAt(slot: number): boolean {
    return (this.bytes.readUInt16BE(this.offsetAt(slot)) & MISSING) !== 0;
  }

  /** The entry as stored, with its "missing once" flag set or cleared. */
  entryAt(slot: number, missing: boolean): Buffer {
    const o = this.offsetAt(slot);
    const entry = Buffer.from(this.bytes.subarray(o, entryEnd(this.bytes, o)));
    entry.writeUInt16BE(idLength(entry, 0) | (missing ? MISSING : 0), 0);
    return entry;
  }

  /** Marks an entry as present in this run; false when it was already marked (a duplicate). */
  mark(slot: number): boolean {
    if (this.table[slot] < 0) return false;
    this.table[slot] = -this.table[slot];
    return true;
  }

  /** The slot of the entry stored at byte offset o (an indexed one). */
  private slotOf(o: number): number {
    let slot = this.home(this.bytes, o + 2, idLength(this.bytes, o));
    while (this.offsetAt(slot) !== o) slot = this.next(slot);
    return slot;
  }

  /**
   * The byte offsets of the indexed entries seen in this pass, or of those not seen, ascending — from the table,
   * not a walk over a million ids: a full pass sees nearly all, an incremental one nearly none.
   */
  private offsets(seen: boolean): Int32Array {
    const table = this.table;
    let n = 0;
    for (let slot = 0; slot < table.length; slot++) if (table[slot] !== 0 && table[slot] < 0 === seen) n++;
    const out = new Int32Array(n);
    n = 0;
    for (let slot = 0; slot < table.length; slot++)
      if (table[slot] !== 0 && table[slot] < 0 === seen) out[n++] = this.offsetAt(slot);
    return out.sort();
  }

  /** Entries not marked, in stored order: after a complete pass, the deleted records. */
  *unmarked(): Generator<number> {
    for (const o of this.offsets(false)) yield this.slotOf(o);
  }

  /**
   * The unmarked entries as they are stored, in runs of adjacent ones: views into the snapshot, no copy (an
   * incremental pass keeps nearly every entry; one Buffer per entry made its peak RSS the full pass's and more).
   * An id's second entry is not kept.
   */
  *unmarkedBytes(): Generator<Buffer> {
    // The seen entries and the second entries, both ascending, merged: what lies between them is kept.
    const seen = this.offsets(true);
    const twice = this.duplicates;
    let from = 0;
    for (let i = 0, j = 0; i < seen.length || j < twice.length;) {
      const o = j >= twice.length || (i < seen.length && seen[i] < twice[j]) ? seen[i++] : twice[j++];
      if (o > from) yield this.bytes.subarray(from, o);
      from = entryEnd(this.bytes, o);
    }
    if (from < this.bytes.length) yield this.bytes.subarray(from);
  }
}

const LOAD = 0.6;
/** A change id's bytes, to compare with an entry's: one buffer for every comparison. */
const SCRATCH = Buffer.alloc(CONTENT_HASH_BYTES);

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
    if (end > bytes.length) throw new Error('snapshot is truncated');
    visit(bytes.subarray(at + 2, at + 2 + len), bytes.subarray(at + 2 + len, end));
    at = end;
  }
}

/** FNV-1a over bytes: fast, and spreads ids like `ctl-0000123` well. */
function fnv(b: Buffer, start: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < start + length; i++) {
    h ^= b[i];
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
