import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { BlockUpload, downloadWhole } from '../../shared/state/blocks';

/**
 * A block blob written as a stream (shared/state/blocks.ts), against Azurite: blocks of the size asked, the blob
 * committed whole at the end and not before, and each block checked by the service against its MD5 — a block changed
 * on its way (a proxy between us and Azurite flips one byte) fails the upload, and the blob that was there stays.
 */
jest.setTimeout(60_000);

let azurite: RunningAzurite;
let proxy: Server;
/** Flip a byte of the next block staged through the proxy. */
let corruptNext = false;
/** Requests the proxy has passed on. */
let proxied = 0;
let direct: ContainerClient;
let viaProxy: ContainerClient;

beforeAll(async () => {
  azurite = await startAzurite();
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      proxied++;
      const body = Buffer.concat(chunks);
      if (corruptNext && req.method === 'PUT' && /[?&]comp=block(&|$)/.test(req.url ?? '') && body.length) {
        corruptNext = false;
        body[body.length >> 1] ^= 0xff;
      }
      const out = request(
        {
          host: '127.0.0.1',
          port: azurite.blobPort,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((ok) => proxy.listen(0, '127.0.0.1', ok));
  const port = (proxy.address() as AddressInfo).port;
  direct = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient('blocks');
  await direct.createIfNotExists();
  viaProxy = BlobServiceClient.fromConnectionString(
    azurite.connectionString.replace(`:${azurite.blobPort}/`, `:${port}/`),
  ).getContainerClient('blocks');
});
afterAll(async () => {
  await new Promise((ok) => proxy.close(ok));
  await azurite.stop();
});

/** `count` chunks of pseudo-random sizes (1 B – 300 KB) and content. */
function chunks(count: number, seed: number): Buffer[] {
  let x = seed;
  const next = () => (x = (x * 1_103_515_245 + 12_345) % 2 ** 31);
  return Array.from({ length: count }, () => {
    const b = Buffer.alloc(1 + (next() % 300_000));
    for (let i = 0; i < b.length; i += 4096) b[i] = next() & 0xff;
    return b;
  });
}
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test('the bytes written become the blob, in blocks of the size asked, committed at the end', async () => {
  const parts = chunks(40, 7);
  const blob = direct.getBlockBlobClient('whole.bin');
  const upload = new BlockUpload(blob, {
    blockBytes: 1 << 20,
    inFlight: 3,
    blobHTTPHeaders: { blobContentType: 'application/x-test' },
  });
  let stagedBeforeEnd = 0;
  await pipeline(
    (async function* () {
      for (const [i, p] of parts.entries()) {
        if (i === parts.length - 1) {
          // Nothing is visible before the end: the blocks wait uncommitted.
          const list = await blob.getBlockList('all');
          stagedBeforeEnd = list.uncommittedBlocks?.length ?? 0;
          expect(list.committedBlocks ?? []).toHaveLength(0);
        }
        yield p;
      }
    })(),
    upload,
  );
  const all = Buffer.concat(parts);
  const stored = await blob.downloadToBuffer();
  expect(sha(stored)).toBe(sha(all));
  // Blocks of at least the size asked (the last: what was left), each less than one chunk more.
  const sizes = (await blob.getBlockList('committed')).committedBlocks?.map((b) => b.size) ?? [];
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(all.length);
  expect(sizes.length).toBeGreaterThan(3);
  for (const size of sizes.slice(0, -1)) {
    expect(size).toBeGreaterThanOrEqual(1 << 20);
    expect(size).toBeLessThan((1 << 20) + 300_000);
  }
  expect(stagedBeforeEnd).toBeGreaterThan(0);
  expect((await blob.getProperties()).contentType).toBe('application/x-test');
});

test('a block changed on its way is refused by its MD5: the upload fails and the blob before it stays', async () => {
  const name = 'guarded.bin';
  const before = Buffer.from('the previous version\n');
  await direct.getBlockBlobClient(name).upload(before, before.length);
  corruptNext = true;
  const upload = new BlockUpload(viaProxy.getBlockBlobClient(name), { blockBytes: 256 << 10, inFlight: 2 });
  const failure = await pipeline(Readable.from(chunks(20, 11)), upload).then(
    () => undefined,
    (err: unknown) => err as { statusCode?: number; code?: string },
  );
  expect(corruptNext).toBe(false); // the proxy did change a block
  expect(failure?.statusCode).toBe(400);
  expect(failure?.code).toBe('Md5Mismatch');
  expect(await direct.getBlockBlobClient(name).downloadToBuffer()).toEqual(before);
});

test('a block refused fails the upload at once, before the next block or the end is written', async () => {
  corruptNext = true;
  const upload = new BlockUpload(viaProxy.getBlockBlobClient('refused.bin'), {
    blockBytes: 64 << 10,
    inFlight: 2,
  });
  const failed = new Promise<unknown>((ok) => upload.once('error', ok));
  upload.write(Buffer.alloc(100 << 10, 1)); // one block, staged now; nothing more is written
  const bound = new Promise((ok) => setTimeout(() => ok('no error'), 20_000).unref());
  expect(await Promise.race([failed, bound])).toMatchObject({ statusCode: 400, code: 'Md5Mismatch' });
  expect(upload.destroyed).toBe(true);
});

test('an upload stopped before its end commits nothing, and one aborted while idle ends', async () => {
  const name = 'stopped.bin';
  const before = Buffer.from('kept\n');
  await direct.getBlockBlobClient(name).upload(before, before.length);
  const stopped = new BlockUpload(direct.getBlockBlobClient(name), { blockBytes: 64 << 10, inFlight: 2 });
  for (const p of chunks(5, 3)) stopped.write(p);
  await new Promise((ok) => setTimeout(ok, 200)); // blocks staged
  const failed = new Promise<unknown>((ok) => stopped.once('error', ok));
  stopped.destroy(new Error('stopped by the test'));
  expect(await failed).toMatchObject({ message: 'stopped by the test' });
  expect(await direct.getBlockBlobClient(name).downloadToBuffer()).toEqual(before);
  expect(
    (await direct.getBlockBlobClient(name).getBlockList('uncommitted')).uncommittedBlocks?.length,
  ).toBeGreaterThan(0);

  const abort = new AbortController();
  const idle = new BlockUpload(direct.getBlockBlobClient(name), {
    blockBytes: 64 << 10,
    inFlight: 2,
    abortSignal: abort.signal,
  });
  idle.write(Buffer.alloc(10));
  const closed = new Promise<unknown>((ok) => idle.once('error', ok));
  abort.abort();
  expect(await closed).toMatchObject({ name: 'AbortError' });
  expect(await direct.getBlockBlobClient(name).downloadToBuffer()).toEqual(before);
});

test('a blob still on its way: what is written meanwhile waits for it, and a blob that never comes fails the upload at once', async () => {
  // As an export gives it: the container is made sure of while the first bytes are produced.
  let arrive: (blob: ReturnType<ContainerClient['getBlockBlobClient']>) => void = () => undefined;
  const later = new BlockUpload(new Promise((ok) => (arrive = ok)), { blockBytes: 64 << 10, inFlight: 2 });
  const parts = chunks(12, 5);
  const written = pipeline(Readable.from(parts), later);
  await new Promise((ok) => setTimeout(ok, 100));
  arrive(direct.getBlockBlobClient('later.bin'));
  await written;
  expect(sha(await direct.getBlockBlobClient('later.bin').downloadToBuffer())).toBe(
    sha(Buffer.concat(parts)),
  );

  // A container the account may not make (a wrong key): Azurite refuses it, and the upload fails with that refusal
  // before anything more is written.
  const wrongKey = azurite.connectionString.replace(
    /AccountKey=[^;]+/,
    `AccountKey=${Buffer.alloc(64, 7).toString('base64')}`,
  );
  const container = BlobServiceClient.fromConnectionString(wrongKey).getContainerClient('refused');
  const refused = new BlockUpload(
    container.createIfNotExists().then(() => container.getBlockBlobClient('x.bin')),
    { blockBytes: 64 << 10, inFlight: 2 },
  );
  const failed = new Promise<unknown>((ok) => refused.once('error', ok));
  refused.write(Buffer.alloc(10)); // less than a block: nothing is staged, only the blob is waited for
  expect(await failed).toMatchObject({ statusCode: 403 });
  expect(refused.destroyed).toBe(true);
});

test('a blob read whole in one request (the SDK asks for its size first), and a missing one is a 404', async () => {
  const bytes = Buffer.concat(chunks(4, 9));
  await direct.getBlockBlobClient('whole-read.bin').upload(bytes, bytes.length);
  const before = proxied;
  expect(sha(await downloadWhole(viaProxy.getBlobClient('whole-read.bin')))).toBe(sha(bytes));
  expect(proxied - before).toBe(1);
  await expect(downloadWhole(direct.getBlobClient('never-written.bin'))).rejects.toMatchObject({
    statusCode: 404,
  });
});
