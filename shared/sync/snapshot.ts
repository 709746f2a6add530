import { CONTENT_HASH_BYTES } from './fingerprint';

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
    const offsets: number[] = [];
    for (let at = 0; at < bytes.length;) {
      offsets.push(at);
      at += 2 + bytes.readUInt16BE(at) + CONTENT_HASH_BYTES;
      if (at > bytes.length) throw new Error('snapshot is truncated');
    }
    this.count = offsets.length;
    this.offsets = Int32Array.from(offsets);
    // Open addressing, load ≤ 0.5; slots hold entry index + 1 (0 = empty).
    let size = 16;
    while (size < this.count * 2) size *= 2;
    this.table = new Int32Array(size);
    for (let i = 0; i < this.count; i++) {
      const o = this.offsets[i];
      let slot = fnv(bytes, o + 2, bytes.readUInt16BE(o)) & (size - 1);
      while (this.table[slot] !== 0) slot = (slot + 1) & (size - 1);
      this.table[slot] = i + 1;
    }
    this.seen = new Uint8Array(this.count);
  }

  /** The entry index of an id, or -1. */
  find(id: Buffer): number {
    if (this.count === 0) return -1;
    const mask = this.table.length - 1;
    for (let slot = fnv(id, 0, id.length) & mask; ; slot = (slot + 1) & mask) {
      const e = this.table[slot];
      if (e === 0) return -1;
      const o = this.offsets[e - 1];
      const len = this.bytes.readUInt16BE(o);
      if (len === id.length && this.bytes.compare(id, 0, len, o + 2, o + 2 + len) === 0) return e - 1;
    }
  }

  hashAt(i: number): Buffer {
    const o = this.offsets[i];
    const start = o + 2 + this.bytes.readUInt16BE(o);
    return this.bytes.subarray(start, start + CONTENT_HASH_BYTES);
  }

  idAt(i: number): string {
    const o = this.offsets[i];
    return this.bytes.toString('utf8', o + 2, o + 2 + this.bytes.readUInt16BE(o));
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
}

/** Builds the next snapshot in 64 KiB chunks as records stream past. */
export class SnapshotWriter {
  private readonly chunks: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(64 * 1024);
  private used = 0;
  private recentChunk = 0;
  private recentOffset = 0;
  count = 0;

  add(id: Buffer, hash: Buffer): void {
    const need = 2 + id.length + CONTENT_HASH_BYTES;
    if (this.used + need > this.chunk.length) {
      this.chunks.push(this.chunk.subarray(0, this.used));
      this.chunk = Buffer.allocUnsafe(Math.max(64 * 1024, need));
      this.used = 0;
    }
    this.chunk.writeUInt16BE(id.length, this.used);
    id.copy(this.chunk, this.used + 2);
    hash.copy(this.chunk, this.used + 2 + id.length);
    this.used += need;
    this.count++;
  }

  /** The bytes added since the last call: one page's entries, for its checkpoint. */
  takeRecent(): Buffer {
    const parts =
      this.recentChunk === this.chunks.length
        ? [this.chunk.subarray(this.recentOffset, this.used)]
        : [
            this.chunks[this.recentChunk].subarray(this.recentOffset),
            ...this.chunks.slice(this.recentChunk + 1),
            this.chunk.subarray(0, this.used),
          ];
    this.recentChunk = this.chunks.length;
    this.recentOffset = this.used;
    return Buffer.concat(parts);
  }

  /** The snapshot as its chunks, to stream out without one more copy of the whole. */
  chunkList(): Buffer[] {
    return [...this.chunks, this.chunk.subarray(0, this.used)];
  }

  toBuffer(): Buffer {
    return Buffer.concat([...this.chunks, this.chunk.subarray(0, this.used)]);
  }
}

/** Calls `visit` for each [id, hash] entry of a buffer in the snapshot format. */
export function forEachEntry(bytes: Buffer, visit: (id: Buffer, hash: Buffer) => void): void {
  for (let at = 0; at < bytes.length;) {
    const len = bytes.readUInt16BE(at);
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
