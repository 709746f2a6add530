/*
 * Deletion vectors (PROTOCOL.md, "Deletion Vectors" and "Deletion Vector Format"): the rows of a data file that a
 * table version no longer has, as a set of row indexes — Delta's magic number, then a 64-bit RoaringBitmap in the
 * portable format of the RoaringFormatSpec (a 32-bit RoaringBitmap per "bucket" of the high 32 bits). This sink writes
 * them inline in the log (`storageType: 'i'`, Z85 text): no file of its own to keep or remove. It reads the three
 * kinds, so a table where Spark deleted rows (`u`: a `deletion_vector_<uuid>.bin` beside the data) reads right.
 */
import { crc32 } from 'node:zlib';

/** How an `add` or `remove` names the rows deleted from its file. */
export interface DeletionVector {
  storageType: 'u' | 'i' | 'p';
  pathOrInlineDv: string;
  offset?: number;
  sizeInBytes: number;
  cardinality: number;
}

const MAGIC = 1681511377;
const NO_RUNS = 12346;
const WITH_RUNS = 12347;
const ARRAY_MAX = 4096;

const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const Z85_VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < Z85.length; i++) Z85_VALUE[Z85.charCodeAt(i)] = i;

/** Z85 (ZeroMQ's base 85): four bytes a five-character group; the bytes padded with zeros to a multiple of four. */
export function z85Encode(bytes: Uint8Array): string {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let out = '';
  for (let i = 0; i < padded.length; i += 4) {
    let v = view.getUint32(i, false);
    const group = new Array<string>(5);
    for (let j = 4; j >= 0; j--) {
      group[j] = Z85[v % 85];
      v = Math.floor(v / 85);
    }
    out += group.join('');
  }
  return out;
}

export function z85Decode(text: string): Uint8Array {
  if (text.length % 5) throw new Error(`Z85 text of ${text.length} characters (not a multiple of five)`);
  const out = new Uint8Array((text.length / 5) * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < text.length; i += 5) {
    let v = 0;
    for (let j = 0; j < 5; j++) {
      const d = Z85_VALUE[text.charCodeAt(i + j)] ?? -1;
      if (d < 0) throw new Error(`Z85 text holds ${JSON.stringify(text[i + j])}`);
      v = v * 85 + d;
    }
    if (v > 0xffffffff) throw new Error('Z85 group out of range');
    view.setUint32((i / 5) * 4, v, false);
  }
  return out;
}

/** A 32-bit RoaringBitmap in the portable format: array and bitmap containers (runs are read, not written). */
function roaring32(values: Uint32Array, start: number, end: number): Uint8Array {
  // Containers: the values sharing their high 16 bits.
  const containers: Array<{ key: number; low: Uint16Array }> = [];
  for (let i = start; i < end;) {
    const key = values[i] >>> 16;
    let j = i;
    while (j < end && values[j] >>> 16 === key) j++;
    const low = new Uint16Array(j - i);
    for (let k = i; k < j; k++) low[k - i] = values[k] & 0xffff;
    containers.push({ key, low });
    i = j;
  }
  const n = containers.length;
  const sizes = containers.map((c) => (c.low.length > ARRAY_MAX ? 8192 : c.low.length * 2));
  const header = 8 + 4 * n + 4 * n; // cookie + count, key/cardinality pairs, offsets
  const out = new Uint8Array(header + sizes.reduce((a, b) => a + b, 0));
  const view = new DataView(out.buffer);
  view.setUint32(0, NO_RUNS, true);
  view.setUint32(4, n, true);
  let at = header;
  containers.forEach((c, i) => {
    view.setUint16(8 + 4 * i, c.key, true);
    view.setUint16(10 + 4 * i, c.low.length - 1, true);
    view.setUint32(8 + 4 * n + 4 * i, at, true);
    if (c.low.length > ARRAY_MAX) {
      for (const v of c.low) out[at + (v >>> 3)] |= 1 << (v & 7); // little-endian 64-bit words, bit by bit
    } else c.low.forEach((v, k) => view.setUint16(at + 2 * k, v, true));
    at += sizes[i];
  });
  return out;
}

/** Reads a 32-bit RoaringBitmap at `at`; calls `each` with every value (`high` above it); answers where it ends. */
function readRoaring32(view: DataView, at: number, high: number, each: (row: number) => void): number {
  const cookie = view.getUint32(at, true);
  let n: number;
  let runs: Uint8Array | undefined;
  let pos: number;
  if ((cookie & 0xffff) === WITH_RUNS) {
    n = (cookie >>> 16) + 1;
    runs = new Uint8Array(view.buffer, view.byteOffset + at + 4, Math.ceil(n / 8));
    pos = at + 4 + runs.length;
  } else if (cookie === NO_RUNS) {
    n = view.getUint32(at + 4, true);
    pos = at + 8;
  } else throw new Error(`not a RoaringBitmap (cookie ${cookie})`);
  const keys: Array<{ key: number; cardinality: number; run: boolean }> = [];
  for (let i = 0; i < n; i++)
    keys.push({
      key: view.getUint16(pos + 4 * i, true),
      cardinality: view.getUint16(pos + 4 * i + 2, true) + 1,
      run: Boolean(runs && runs[i >>> 3] & (1 << (i & 7))),
    });
  pos += 4 * n;
  if (!runs || n >= 4) pos += 4 * n; // the offsets, which sequential reading does not need
  for (const c of keys) {
    const base = high + c.key * 65536;
    if (c.run) {
      const count = view.getUint16(pos, true);
      pos += 2;
      for (let r = 0; r < count; r++) {
        const s = view.getUint16(pos + 4 * r, true);
        const length = view.getUint16(pos + 4 * r + 2, true);
        for (let v = s; v <= s + length; v++) each(base + v);
      }
      pos += 4 * count;
    } else if (c.cardinality > ARRAY_MAX) {
      for (let b = 0; b < 8192; b++) {
        const byte = view.getUint8(pos + b);
        if (byte) for (let bit = 0; bit < 8; bit++) if (byte & (1 << bit)) each(base + b * 8 + bit);
      }
      pos += 8192;
    } else {
      for (let k = 0; k < c.cardinality; k++) each(base + view.getUint16(pos + 2 * k, true));
      pos += 2 * c.cardinality;
    }
  }
  return pos;
}

/** Row indexes (each below 2^53) as a deletion vector's bytes: the magic number, then the 64-bit bitmap. */
export function serializeRows(rows: Iterable<number>): Uint8Array {
  const sorted = Float64Array.from(new Set(rows)).sort();
  const buckets: Uint8Array[] = [];
  const keys: number[] = [];
  for (let i = 0; i < sorted.length;) {
    const key = Math.floor(sorted[i] / 2 ** 32);
    let j = i;
    while (j < sorted.length && Math.floor(sorted[j] / 2 ** 32) === key) j++;
    const low = Uint32Array.from(sorted.subarray(i, j), (v) => v - key * 2 ** 32);
    keys.push(key);
    buckets.push(roaring32(low, 0, low.length));
    i = j;
  }
  const out = new Uint8Array(4 + 8 + buckets.reduce((a, b) => a + 4 + b.length, 0));
  const view = new DataView(out.buffer);
  view.setInt32(0, MAGIC, true);
  view.setBigUint64(4, BigInt(buckets.length), true);
  let at = 12;
  buckets.forEach((b, i) => {
    view.setUint32(at, keys[i], true);
    out.set(b, at + 4);
    at += 4 + b.length;
  });
  return out;
}

/** A deletion vector's bytes as the row indexes they hold. */
export function deserializeRows(bytes: Uint8Array): Set<number> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getInt32(0, true) !== MAGIC) throw new Error('not a Delta deletion vector (magic number)');
  const buckets = Number(view.getBigUint64(4, true));
  const rows = new Set<number>();
  let at = 12;
  for (let b = 0; b < buckets; b++) {
    const key = view.getUint32(at, true);
    at = readRoaring32(view, at + 4, key * 2 ** 32, (row) => rows.add(row));
  }
  return rows;
}

/** Rows deleted from a file, as an inline descriptor for its `add` (undefined when there are none). */
export function inlineVector(rows: ReadonlySet<number>): DeletionVector | undefined {
  if (!rows.size) return undefined;
  const bytes = serializeRows(rows);
  return {
    storageType: 'i',
    pathOrInlineDv: z85Encode(bytes),
    sizeInBytes: bytes.length,
    cardinality: rows.size,
  };
}

/** Where a `u` vector is kept: `<prefix>/deletion_vector_<uuid>.bin` under the table, the UUID in the last 20 characters. */
export function vectorFile(dv: DeletionVector): string {
  const id = Buffer.from(z85Decode(dv.pathOrInlineDv.slice(-20))).toString('hex');
  const uuid = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
  const prefix = dv.pathOrInlineDv.slice(0, -20);
  return `${prefix ? `${prefix}/` : ''}deletion_vector_${uuid}.bin`;
}

/**
 * The rows a descriptor deletes. `read` fetches a byte range of a file under the table (`u`), or an absolute path
 * (`p`, refused: this sink reads only what lies under the table it writes). A stored vector's checksum is checked.
 */
export async function rowsOf(
  dv: DeletionVector,
  read: (path: string, start: number, end: number) => Promise<Uint8Array>,
): Promise<Set<number>> {
  if (dv.storageType === 'i')
    return deserializeRows(z85Decode(dv.pathOrInlineDv).subarray(0, dv.sizeInBytes));
  if (dv.storageType !== 'u')
    throw new Error(`a deletion vector at an absolute path (${dv.pathOrInlineDv}) is not read here`);
  const file = vectorFile(dv);
  const at = dv.offset ?? 1;
  const framed = await read(file, at, at + 4 + dv.sizeInBytes + 4);
  const view = new DataView(framed.buffer, framed.byteOffset, framed.byteLength);
  const size = view.getInt32(0, false);
  if (size !== dv.sizeInBytes)
    throw new Error(`${file}: a deletion vector of ${size} bytes where the log says ${dv.sizeInBytes}`);
  const data = framed.subarray(4, 4 + size);
  if (crc32(data) >>> 0 !== view.getUint32(4 + size, false) >>> 0)
    throw new Error(`${file}: a deletion vector whose checksum does not match`);
  return deserializeRows(data);
}

/** The descriptor's identity with its file (PROTOCOL.md, "Derived Fields"): a file with another vector is another. */
export const vectorId = (dv: DeletionVector | undefined) =>
  dv ? `${dv.storageType}${dv.pathOrInlineDv}${dv.offset === undefined ? '' : `@${dv.offset}`}` : '';
