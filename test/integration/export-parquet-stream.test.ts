import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';

/**
 * A Parquet export goes to Blob Storage while it is written, and starts over when a late page changes the columns.
 * The pages come from a GraphQL server of a shape we did not design (nodes, no edges; a field that turns from a
 * number to text), on a real connection; the export runs the export activity's code (dist, in a process of its own:
 * the writer is an ES module) against Azurite, and the blob is read back with an independent reader.
 */
jest.setTimeout(120_000);

const DIST = resolve(__dirname, '../../dist');
const READER = resolve(__dirname, '../helpers/read-parquet.mjs');
const run = promisify(execFile);

let azurite: RunningAzurite;
let dir: string;
beforeAll(async () => {
  azurite = await startAzurite();
  dir = mkdtempSync(join(tmpdir(), 'ti-parquet-stream-'));
});
afterAll(async () => {
  await azurite.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * 640 bytes of text snappy cannot shorten much: 10 000 records make ~6.5 MB of file, so blocks are staged while
 * pages still arrive (the file goes out in ~1 MB pieces as its 2 000-row groups are written). The same function is
 * the child's (TEXT), as text: this file is compiled for the test and the child runs plain JavaScript.
 */
const TEXT = `(i) => Array.from({ length: 10 }, (_, k) => require('node:crypto').createHash('sha256').update(i + '/' + k).digest('hex')).join('')`;
const text = (i: number) =>
  Array.from({ length: 10 }, (_, k) => createHash('sha256').update(`${i}/${k}`).digest('hex')).join('');
const RECORDS = 10_000;

/**
 * Serves `items` by cursor, 100 a page; with `late`, one more page after them where `n` is text and `extra`
 * appears. Before it answers the last page, it asks Azurite which blocks the export has staged so far.
 */
const CHILD = `
const { createServer } = require('node:http');
const { BlobServiceClient } = require('@azure/storage-blob');
const { ExportStorage } = require(${JSON.stringify(`${DIST}/shared/exports/storage.js`)});
const { writeStream } = require(${JSON.stringify(`${DIST}/shared/exports/slices.js`)});
const { TenantGraphqlClient } = require(${JSON.stringify(`${DIST}/shared/graphql/client.js`)});
const { parseStreams } = require(${JSON.stringify(`${DIST}/shared/streams/index.js`)});
const { connectionString, late, id, records } = JSON.parse(process.argv[1]);
const text = ${TEXT};
const service = BlobServiceClient.fromConnectionString(connectionString);
const blob = service.getContainerClient('exports').getBlockBlobClient(id + '/items.parquet');
let stagedBeforeLastPage = -1;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', async () => {
    const { variables } = JSON.parse(body);
    const from = variables.after ? Number(variables.after) : 0;
    const last = late ? records + 1 : records;
    const nodes = [];
    for (let i = from; i < Math.min(from + 100, records); i++) nodes.push({ id: 'r' + i, n: i, text: text(i) });
    if (from >= records) nodes.push({ id: 'late', n: 'many', text: 'x', extra: true });
    const to = from + nodes.length;
    if (to >= last) {
      const list = await blob.getBlockList('uncommitted').catch(() => ({ uncommittedBlocks: [] }));
      stagedBeforeLastPage = (list.uncommittedBlocks || []).length;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: { items: { nodes, pageInfo: { hasNextPage: to < last, endCursor: String(to) } } } }));
  });
});
server.listen(0, '127.0.0.1', async () => {
  const [stream] = parseStreams({ streams: [{
    name: 'items',
    document: 'query Items($first: Int, $after: String) { items(first: $first, after: $after) { nodes { id n text extra } pageInfo { hasNextPage endCursor } } }',
    paths: { records: 'items.nodes', hasNextPage: 'items.pageInfo.hasNextPage', endCursor: 'items.pageInfo.endCursor' },
  }] }, 'test');
  const graphql = new TenantGraphqlClient('http://127.0.0.1:' + server.address().port + '/graphql', {
    kind: 'm2m', getToken: async () => 'token', invalidate: () => undefined,
  });
  try {
    const storage = new ExportStorage(service, () => service);
    const stored = await writeStream(storage, graphql, stream, { id, format: 'parquet', gzip: false });
    process.stdout.write(JSON.stringify({ stored, stagedBeforeLastPage }));
  } finally {
    server.close();
  }
});
`;

async function exportItems(late: boolean) {
  const id = `stream-${late ? 'late' : 'one-shape'}`;
  const { stdout } = await run(
    process.execPath,
    ['-e', CHILD, JSON.stringify({ connectionString: azurite.connectionString, late, id, records: RECORDS })],
    { maxBuffer: 1 << 20, cwd: resolve(__dirname, '../..') },
  );
  const result = JSON.parse(stdout) as {
    stored: { name: string; records: number; bytes: number; sha256: string };
    stagedBeforeLastPage: number;
  };
  const bytes = await BlobServiceClient.fromConnectionString(azurite.connectionString)
    .getContainerClient('exports')
    .getBlockBlobClient(result.stored.name)
    .downloadToBuffer();
  const file = join(dir, `${id}.parquet`);
  writeFileSync(file, bytes);
  const back = JSON.parse((await run(process.execPath, [READER, file], { maxBuffer: 256 << 20 })).stdout) as {
    columns: Array<{ name: string; type: string; convertedType: string | null }>;
    rows: Array<Record<string, unknown>>;
  };
  return { ...result, bytes, back };
}

const expected = (i: number) => ({ id: `r${i}`, n: i, text: text(i) });

it('records of one shape: blocks are staged while pages still arrive, and the blob is the whole file', async () => {
  const { stored, stagedBeforeLastPage, bytes, back } = await exportItems(false);
  // Blocks went out before the last page was asked for.
  expect(stagedBeforeLastPage).toBeGreaterThan(0);
  expect(stored).toMatchObject({ records: RECORDS, bytes: bytes.length });
  expect(stored.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  expect(back.columns.map((c) => c.name)).toEqual(['id', 'n', 'text']);
  expect(back.rows).toEqual(Array.from({ length: RECORDS }, (_, i) => expected(i)));
});

it('a last page that changes the columns after a block went out: the upload starts over and the blob holds every row with the new columns', async () => {
  const { stored, stagedBeforeLastPage, bytes, back } = await exportItems(true);
  expect(stagedBeforeLastPage).toBeGreaterThan(0);
  expect(stored).toMatchObject({ records: RECORDS + 1, bytes: bytes.length });
  expect(stored.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  expect(back.columns.map((c) => [c.name, c.type, c.convertedType])).toEqual([
    ['id', 'BYTE_ARRAY', 'UTF8'],
    ['n', 'BYTE_ARRAY', 'JSON'],
    ['text', 'BYTE_ARRAY', 'UTF8'],
    ['extra', 'BOOLEAN', null],
  ]);
  expect(back.rows).toEqual([
    ...Array.from({ length: RECORDS }, (_, i) => ({ ...expected(i), extra: null })),
    { id: 'late', n: 'many', text: 'x', extra: true },
  ]);
});
