import { CONTENT_HASH_BYTES } from './fingerprint';

/**
 * Entries: [u16 id length, its top bit the "missing once" flag][id utf8][16-byte hash]. The flag marks a record an
 * offset- or page-paged pass without a total did not see: it is reported deleted only when the next pass misses it
 * too (docs/sync.md). So an id holds at most 32 KiB.
 */
export const MAX_ID_BYTES = 0x7fff;
const MISSING = 0x8000;

const idLength = (bytes: Buffer, at: number) => bytes.readUInt16BE(at) & MAX_ID_BYTES;

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
 * A million records are ~30 MB of bytes and a typed-array index, not a million JavaScript objects, and the
 * whole state is one storage object (one round trip per run, not one per record).
 */
export class Snapshot {
  readonly count: number;
  private readonly offsets: Int32Array;
  private readonly table: Int32Array;
  private readonly seen: Uint8Array;

  constructor(readonly bytes: Buffer = Buffer.alloc(0)) {
    // Counted first, then indexed: a JavaScript array of a million offsets would cost more than the entries.
    let count = 0;
    for (let at = 0; at < bytes.length; count++) {
      at += 2 + idLength(bytes, at) + CONTENT_HASH_BYTES;
      if (at > bytes.length) throw new Error('snapshot is truncated');
    }
    this.count = count;
    this.offsets = new Int32Array(count);
    for (let i = 0, at = 0; i < count; i++) {
      this.offsets[i] = at;
      at += 2 + idLength(bytes, at) + CONTENT_HASH_BYTES;
    }
    // Open addressing, load ≤ 0.5; slots hold entry index + 1 (0 = empty).
    let size = 16;
    while (size < this.count * 2) size *= 2;
    this.table = new Int32Array(size);
    this.seen = new Uint8Array(this.count);
    for (let i = 0; i < this.count; i++) {
      const o = this.offsets[i];
      const len = idLength(bytes, o);
      let slot = fnv(bytes, o + 2, len) & (size - 1);
      let duplicate = false;
      for (let e; (e = this.table[slot]) !== 0; slot = (slot + 1) & (size - 1)) {
        const p = this.offsets[e - 1];
        if (idLength(bytes, p) === len && bytes.compare(bytes, o + 2, o + 2 + len, p + 2, p + 2 + len) === 0)
          duplicate = true;
      }
      // An id the server listed twice in one pass is stored twice; only its first entry counts, and the other
      // is never reported as deleted.
      if (duplicate) this.seen[i] = 1;
      else this.table[slot] = i + 1;
    }
  }

  /** The entry index of an id, or -1. */
  find(id: Buffer): number {
    if (this.count === 0) return -1;
    const mask = this.table.length - 1;
    for (let slot = fnv(id, 0, id.length) & mask; ; slot = (slot + 1) & mask) {
      const e = this.table[slot];
      if (e === 0) return -1;
      const o = this.offsets[e - 1];
      const len = idLength(this.bytes, o);
      if (len === id.length && this.bytes.compare(id, 0, len, o + 2, o + 2 + len) === 0) return e - 1;
    }
  }

  hashAt(i: number): Buffer {
    const o = this.offsets[i];
    const start = o + 2 + idLength(this.bytes, o);
    return this.bytes.subarray(start, start + CONTENT_HASH_BYTES);
  }

  idAt(i: number): string {
    const o = this.offsets[i];
    return this.bytes.toString('utf8', o + 2, o + 2 + idLength(this.bytes, o));
  }

  /** The record was missing from the last pass already (an offset or page pass without a total). */
  missingAt(i: number): boolean {
    return (this.bytes.readUInt16BE(this.offsets[i]) & MISSING) !== 0;
  }

  /** Entry i as stored, with its "missing once" flag set or cleared. */
  entryAt(i: number, missing: boolean): Buffer {
    const o = this.offsets[i];
    const entry = Buffer.from(this.bytes.subarray(o, o + 2 + idLength(this.bytes, o) + CONTENT_HASH_BYTES));
    entry.writeUInt16BE(idLength(entry, 0) | (missing ? MISSING : 0), 0);
    return entry;
  }

  /** Marks an entry as present in this run; false when it was already marked (a duplicate). */
  mark(i: number): boolean {
    if (this.seen[i]) return false;
    this.seen[i] = 1;
    return true;
  }

  /** Entries not marked: after a complete pass, the deleted records. */
  *unmarked(): Generator<number> {
    for (let i = 0; i < this.count; i++) if (!this.seen[i]) yield i;
  }

  /**
   * The unmarked entries as they are stored, in runs of adjacent ones: views into the snapshot, no copy (an
   * incremental pass keeps nearly every entry; one Buffer per entry made its peak RSS the full pass's and more).
   */
  *unmarkedBytes(): Generator<Buffer> {
    for (let i = 0; i < this.count;) {
      if (this.seen[i]) {
        i++;
        continue;
      }
      const start = this.offsets[i];
      while (i < this.count && !this.seen[i]) i++;
      yield this.bytes.subarray(start, i < this.count ? this.offsets[i] : this.bytes.length);
    }
  }

  /** Whether entry i was seen in this pass. */
  marked(i: number): boolean {
    return this.seen[i] === 1;
  }
}

/** Entries in the snapshot format, one page at a time: what a page's checkpoint record carries. */
export class EntryWriter {
  private buf = Buffer.allocUnsafe(16 * 1024);
  private used = 0;

  add(id: Buffer, hash: Buffer): void {
    const need = 2 + id.length + CONTENT_HASH_BYTES;
    if (this.used + need > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + need));
      this.buf.copy(bigger, 0, 0, this.used);
      this.buf = bigger;
    }
    this.buf.writeUInt16BE(id.length, this.used);
    id.copy(this.buf, this.used + 2);
    hash.copy(this.buf, this.used + 2 + id.length);
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
