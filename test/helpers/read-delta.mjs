// A Delta table read back in Node for `npm test`, which needs no Python: written for the tests from the protocol
// (PROTOCOL.md — log replay from the newest checkpoint at or before the version, files reconciled by path and deletion
// vector, deletion vectors inline or in files), sharing no code with the delta sink: its own log replay, Z85 and
// Roaring decoding; only the Parquet reader (hyparquet, an ES module: hence a process of its own) is common. The
// conformance suite reads the same tables with delta-rs and Apache Spark.
//
// Usage: read-delta.mjs TABLE_URI [VERSION]. TABLE_URI is a folder, or az://CONTAINER/PATH with
// AZURITE_CONNECTION_STRING set. Prints what read-delta.py prints: version, schema, rows (sorted by their first
// column), files, and each version's operation.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { crc32 } from 'node:zlib';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

async function sourceOf(uri) {
  if (!uri.startsWith('az://')) {
    return {
      list: async (p) => (existsSync(join(uri, p)) ? readdirSync(join(uri, p)) : []),
      read: async (p) => (existsSync(join(uri, p)) ? readFileSync(join(uri, p)) : undefined),
    };
  }
  const { BlobServiceClient } = await import('@azure/storage-blob');
  const [container, ...rest] = uri.slice(5).split('/');
  const c = BlobServiceClient.fromConnectionString(process.env.AZURITE_CONNECTION_STRING).getContainerClient(
    container,
  );
  const at = (p) => [...rest, p].filter(Boolean).join('/');
  return {
    list: async (p) => {
      const out = [];
      for await (const b of c.listBlobsFlat({ prefix: `${at(p)}/` }))
        out.push(b.name.slice(at(p).length + 1));
      return out.filter((n) => !n.includes('/'));
    },
    read: async (p) => {
      try {
        return await c.getBlockBlobClient(at(p)).downloadToBuffer();
      } catch (err) {
        if (err.statusCode === 404) return undefined;
        throw err;
      }
    },
  };
}

const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
function z85(text) {
  const out = Buffer.alloc((text.length / 5) * 4);
  for (let g = 0; g < text.length / 5; g++) {
    let v = 0;
    for (const ch of text.slice(g * 5, g * 5 + 5)) v = v * 85 + Z85.indexOf(ch);
    out.writeUInt32BE(v, g * 4);
  }
  return out;
}

// The row numbers a serialized deletion vector holds: magic number, then a 64-bit portable RoaringBitmap.
function roaringRows(b) {
  if (b.readUInt32LE(0) !== 1681511377) throw new Error('deletion vector: bad magic number');
  const rows = new Set();
  let p = 12;
  for (let k = 0; k < Number(b.readBigUInt64LE(4)); k++) {
    const high = b.readUInt32LE(p) * 2 ** 32;
    const cookie = b.readUInt32LE(p + 4);
    p += 4;
    const runs = (cookie & 0xffff) === 12347;
    const count = runs ? (cookie >>> 16) + 1 : b.readUInt32LE(p + 4);
    const flags = runs ? b.subarray(p + 4, p + 4 + Math.ceil(count / 8)) : Buffer.alloc(0);
    p += runs ? 4 + flags.length : 8;
    const header = Array.from({ length: count }, (_, i) => [
      b.readUInt16LE(p + 4 * i),
      b.readUInt16LE(p + 4 * i + 2) + 1,
    ]);
    p += 4 * count;
    if (!runs || count >= 4) p += 4 * count;
    header.forEach(([key, card], i) => {
      const base = high + key * 65536;
      if (runs && flags[i >> 3] & (1 << (i & 7))) {
        const n = b.readUInt16LE(p);
        for (let r = 0; r < n; r++)
          for (let v = 0; v <= b.readUInt16LE(p + 4 + 4 * r); v++)
            rows.add(base + b.readUInt16LE(p + 2 + 4 * r) + v);
        p += 2 + 4 * n;
      } else if (card > 4096) {
        for (let bit = 0; bit < 65536; bit++) if (b[p + (bit >> 3)] & (1 << (bit & 7))) rows.add(base + bit);
        p += 8192;
      } else {
        for (let j = 0; j < card; j++) rows.add(base + b.readUInt16LE(p + 2 * j));
        p += 2 * card;
      }
    });
  }
  return rows;
}

async function deletedBy(source, dv) {
  if (!dv) return new Set();
  const size = Number(dv.sizeInBytes);
  if (dv.storageType === 'i') return roaringRows(z85(dv.pathOrInlineDv).subarray(0, size));
  const id = z85(dv.pathOrInlineDv.slice(-20)).toString('hex');
  const prefix = dv.pathOrInlineDv.slice(0, -20);
  const uuid = [id.slice(0, 8), id.slice(8, 12), id.slice(12, 16), id.slice(16, 20), id.slice(20)].join('-');
  const file = await source.read(`${prefix ? `${prefix}/` : ''}deletion_vector_${uuid}.bin`);
  if (!file) throw new Error(`deletion vector file ${uuid} missing`);
  const at = Number(dv.offset ?? 1);
  const data = file.subarray(at + 4, at + 4 + size);
  if (crc32(data) >>> 0 !== file.readUInt32BE(at + 4 + size))
    throw new Error(`deletion vector ${uuid}: checksum`);
  return roaringRows(data);
}

const parquetRows = (bytes) =>
  parquetReadObjects({
    file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    compressors,
  });

const plain = (v) =>
  typeof v === 'bigint'
    ? Number(v)
    : Array.isArray(v)
      ? v.map(plain)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
        : v;

const name = (v) => String(v).padStart(20, '0');
const fileKey = (f) =>
  `${decodeURIComponent(f.path)}\0${f.deletionVector ? `${f.deletionVector.storageType}${f.deletionVector.pathOrInlineDv}@${f.deletionVector.offset ?? ''}` : ''}`;

const [uri, wanted] = process.argv.slice(2);
const source = await sourceOf(uri);
const log = await source.list('_delta_log');
const numbers = (re) =>
  log
    .map((n) => re.exec(n))
    .filter(Boolean)
    .map((m) => Number(m[1]));
const commits = numbers(/^(\d{20})\.json$/);
const checkpoints = numbers(/^(\d{20})\.checkpoint\.parquet$/);
const target = wanted === undefined ? Math.max(...commits, ...checkpoints) : Number(wanted);
const from = Math.max(-1, ...checkpoints.filter((v) => v <= target));
const files = new Map();
let meta;
const apply = (a) => {
  if (a.metaData) meta = a.metaData;
  if (a.remove) files.delete(fileKey(a.remove));
  if (a.add) files.set(fileKey(a.add), a.add);
};
if (from >= 0)
  for (const row of await parquetRows(await source.read(`_delta_log/${name(from)}.checkpoint.parquet`)))
    for (const [k, v] of Object.entries(row)) if (v !== null && v !== undefined) apply({ [k]: plain(v) });
const history = commits.filter((c) => c <= from).map((version) => ({ version, operation: null }));
for (let v = from + 1; v <= target; v++) {
  const text = await source.read(`_delta_log/${name(v)}.json`);
  if (!text) throw new Error(`version ${v} missing from the log`);
  const actions = text
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  // A file's `remove` and its `add` with another deletion vector stand side by side in one commit.
  for (const a of actions) if (a.remove) apply(a);
  for (const a of actions) if (!a.remove) apply(a);
  history.push({ version: v, operation: actions.find((a) => a.commitInfo)?.commitInfo.operation ?? null });
}
const schema = JSON.parse(meta.schemaString).fields;
const rows = [];
for (const add of files.values()) {
  const path = decodeURIComponent(add.path);
  const bytes = await source.read(path);
  if (!bytes) throw new Error(`data file ${path} missing`);
  const gone = await deletedBy(source, add.deletionVector);
  (await parquetRows(bytes)).forEach((r, i) => {
    if (!gone.has(i)) rows.push(Object.fromEntries(schema.map((f) => [f.name, plain(r[f.name]) ?? null])));
  });
}
const first = schema[0]?.name;
rows.sort(
  (a, b) => (a[first] === null) - (b[first] === null) || (String(a[first]) < String(b[first]) ? -1 : 1),
);
process.stdout.write(
  JSON.stringify({
    version: target,
    schema: schema.map((f) => [f.name, f.type]),
    rows,
    files: [...files.values()].map((f) => join(uri, decodeURIComponent(f.path))).sort(),
    history,
  }),
);
