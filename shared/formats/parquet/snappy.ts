/**
 * Snappy's block format for the Parquet writer: the algorithm of hyparquet-writer's own compressor, step for step,
 * so the bytes are the same (test/integration/parquet.test.ts), written straight into one buffer sized for the worst
 * case — where the writer's goes through a growing byte writer a byte at a time, a sixth of its CPU on records like
 * the sandbox's (docs/benchmarks.md, "Export").
 */
const MAX_HASH_TABLE_BITS = 14;
const MAX_OFFSET = 0xffff;
const INPUT_MARGIN = 15;

const tables: Uint32Array[] = [];
let out = new Uint8Array(64 * 1024);
let op = 0;

const hashOf = (key: number, shift: number) => Math.imul(key, 0x1e35a7bd) >>> shift;
/** The input's four bytes at `p`, little-endian, as the writer's compressor reads them (a byte past the end is 0). */
const bytes32 = (a: Uint8Array, p: number) => a[p] | (a[p + 1] << 8) | (a[p + 2] << 16) | (a[p + 3] << 24);
// The same read in one step, for a position known to hold four bytes: ~a fifth of the compressor's time on an export's
// pages (docs/benchmarks.md, "Export").
let view: DataView = new DataView(new ArrayBuffer(4));
const load32 = (p: number) => view.getInt32(p, true);

function literal(input: Uint8Array, from: number, length: number): void {
  if (length <= 60) out[op++] = (length - 1) << 2;
  else {
    const value = length - 1;
    const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4;
    out[op++] = (59 + bytes) << 2;
    for (let i = 0; i < bytes; i++) out[op++] = (value >>> (i * 8)) & 0xff;
  }
  // Most literals are a few bytes between two copies: a loop, where a subarray per literal cost a quarter of the time.
  if (length < 64) for (let i = 0; i < length; i++) out[op + i] = input[from + i];
  else out.set(input.subarray(from, from + length), op);
  op += length;
}

function copyBelow64(offset: number, length: number): void {
  if (length < 12 && offset < 2048) {
    out[op++] = (1 + ((length - 4) << 2) + ((offset >>> 8) << 5)) & 0xff;
    out[op++] = offset & 0xff;
  } else {
    out[op++] = (2 + ((length - 1) << 2)) & 0xff;
    out[op++] = offset & 0xff;
    out[op++] = (offset >>> 8) & 0xff;
  }
}

function copy(offset: number, length: number): void {
  while (length >= 68) {
    copyBelow64(offset, 64);
    length -= 64;
  }
  if (length > 64) {
    copyBelow64(offset, 60);
    length -= 60;
  }
  copyBelow64(offset, length);
}

/** The input compressed in Snappy's block format (what Parquet's SNAPPY codec holds). */
export function snappyCompress(input: Uint8Array): Uint8Array {
  const size = input.length;
  view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  // Snappy's bound: a literal's tag is paid for by the copy after it, and a long literal's by its length.
  const bound = 32 + size + Math.ceil(size / 6);
  if (out.length < bound) out = new Uint8Array(bound);
  op = 0;
  for (let v = size; ; v >>>= 7) {
    if ((v & ~0x7f) === 0) {
      out[op++] = v;
      break;
    }
    out[op++] = (v & 0x7f) | 0x80;
  }
  let bits = 1;
  while (1 << bits <= size && bits <= MAX_HASH_TABLE_BITS) bits++;
  bits--;
  const shift = 32 - bits;
  const table = (tables[bits] ??= new Uint32Array(1 << bits));
  table.fill(0);

  let nextEmit = 0;
  if (size >= INPUT_MARGIN) {
    const ipLimit = size - INPUT_MARGIN;
    let ip = 1;
    let nextHash = hashOf(load32(ip), shift);
    let candidate = 0;
    for (;;) {
      let skip = 32;
      let nextIp = ip;
      let done = false;
      do {
        ip = nextIp;
        const hash = nextHash;
        nextIp = ip + (skip++ >>> 5);
        if (ip > ipLimit) {
          done = true;
          break;
        }
        // The one position not yet checked against the end (a step may pass it): read as the writer does.
        nextHash = hashOf(nextIp + 4 <= size ? load32(nextIp) : bytes32(input, nextIp), shift);
        candidate = table[hash];
        table[hash] = ip;
      } while (ip - candidate > MAX_OFFSET || load32(ip) !== load32(candidate));
      if (done) break;
      literal(input, nextEmit, ip - nextEmit);
      do {
        const base = ip;
        let matched = 4;
        while (ip + matched < size && input[ip + matched] === input[candidate + matched]) matched++;
        ip += matched;
        copy(base - candidate, matched);
        nextEmit = ip;
        if (ip >= ipLimit) {
          done = true;
          break;
        }
        table[hashOf(load32(ip - 1), shift)] = ip - 1;
        const hash = hashOf(load32(ip), shift);
        candidate = table[hash];
        table[hash] = ip;
      } while (ip - candidate <= MAX_OFFSET && load32(ip) === load32(candidate));
      if (done) break;
      ip++;
      nextHash = hashOf(load32(ip), shift);
    }
  }
  if (nextEmit < size) literal(input, nextEmit, size - nextEmit);
  // A byte written past the end of a typed array is dropped, not an error: never hand on a page cut short.
  if (op > out.length) throw new Error(`snappy: ${op} bytes out for ${size} in, beyond the bound`);
  return out.slice(0, op);
}
