import type { BlobClient, BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { closeSync, openSync, writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { schemaFindingsSchema } from '../runs/history';
import { statusOf } from '../errors';
import { errorCodeSchema } from '../error-codes';
import { BlockUpload, downloadWhole } from '../state/blocks';
import { lazyContainer } from '../state/lazy';

/** The run in progress: a run that did not finish is resumed, under the same id, by the next one. */
export const syncRunRecordSchema = z.object({
  runId: z.string().min(1),
  startedAt: z.string(),
  /** Start over: every snapshot ignored (`sync --full`). */
  full: z.boolean(),
  /** Every stream gets a full pass, on its snapshot (`sync --full-pass`). */
  fullPass: z.boolean().optional(),
  /** The run's streams as its catalog had them when it began: a resumed run reads with the same ones. */
  streams: z.array(z.unknown()).optional(),
  /** Streams the run cannot read (the tenant's schema moved under them), with why. */
  blocked: z.record(z.string(), z.object({ code: errorCodeSchema, message: z.string() })).optional(),
  /** What the run found about the tenant's schema (shared/catalog/): fields not synced, changes adopted. */
  schema: schemaFindingsSchema.optional(),
});
export type SyncRunRecord = z.infer<typeof syncRunRecordSchema>;

/**
 * Where the sync keeps its state between runs, per tenant: each stream's snapshot (one object), each stream's
 * checkpoint log (appended once per page) and the run record. One round trip per page, never per record.
 */
export interface SyncStateStore {
  readonly description: string;
  /**
   * The snapshot, streamed (a pass reads it twice: at its start, and again at its end); undefined when none. A
   * chunk may be valid only until the next one is asked for (the file store reads every chunk into one buffer).
   */
  readSnapshot(tenant: string, stream: string): Promise<AsyncIterable<Buffer> | undefined>;
  /**
   * The snapshot as it streams past (from the checkpoint log and the previous snapshot): never whole in memory. A
   * chunk is valid only until the next one is asked for (the entries a pass keeps are views of the chunk it reads).
   */
  writeSnapshot(tenant: string, stream: string, snapshot: AsyncIterable<Buffer>): Promise<void>;
  /** The checkpoint log, streamed; undefined when there is none. */
  readCheckpoint(tenant: string, stream: string): Promise<AsyncIterable<Buffer> | undefined>;
  /** `create` starts a new log, replacing any older one. */
  appendCheckpoint(
    tenant: string,
    stream: string,
    record: Buffer,
    options?: { create?: boolean },
  ): Promise<void>;
  clearCheckpoint(tenant: string, stream: string): Promise<void>;
  readRun(tenant: string): Promise<SyncRunRecord | undefined>;
  writeRun(tenant: string, run: SyncRunRecord | undefined): Promise<void>;
  /** The tenant's stored catalog (shared/catalog/), as JSON text; undefined before the first discovery. */
  readCatalog(tenant: string): Promise<string | undefined>;
  writeCatalog(tenant: string, json: string): Promise<void>;
  /**
   * Runs `work` unless another caller is running it for this tenant right now (then `{ ran: false }` at once):
   * starting a run is check-then-start, and two starters must not both see "none running".
   */
  exclusively<T>(tenant: string, work: () => Promise<T>): Promise<Exclusive<T>>;
}

export type Exclusive<T> = { ran: true; value: T } | { ran: false };

/**
 * How long a starter holds the tenant's start lease: it ends when the start does, or by itself after this should
 * the process die holding it (Blob Storage takes 15–60 seconds).
 */
export const START_LEASE_SECONDS = 30;

const parseRun = (text: string): SyncRunRecord | undefined => {
  try {
    return syncRunRecordSchema.parse(JSON.parse(text));
  } catch {
    return undefined; // unreadable: start a new run rather than fail every run from now on
  }
};

/** Object names under a tenant's prefix, the same in both stores. */
// Not gzipped: half of each entry is a hash, which does not compress, and reading a gzip means holding the
// compressed and the whole inflated snapshot at once; plain, it is read straight into one buffer of its size.
const snapshotLeaf = (stream: string) => `${encodeURIComponent(stream)}.snapshot`;
const checkpointLeaf = (stream: string) => `${encodeURIComponent(stream)}.checkpoint`;

const enoent = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/** A snapshot blob's blocks. */
const SNAPSHOT_BLOCK_BYTES = 4 * 1024 * 1024;

/**
 * The chunks gathered into pieces of `bytes` (the last smaller): each chunk is copied before the next is asked for, so
 * its source may reuse its memory. `'reuse'`: every piece is the same buffer, valid until the next is asked for. Else
 * each piece is a buffer of its own, for a consumer that holds it, taken from `spare` — where the consumer gives back
 * the pieces it is done with — when one is there.
 */
async function* gathered(
  chunks: AsyncIterable<Buffer>,
  bytes: number,
  spare: 'reuse' | Buffer[],
): AsyncGenerator<Buffer> {
  const next = () => (spare === 'reuse' ? undefined : spare.pop()) ?? Buffer.allocUnsafe(bytes);
  let piece = next();
  let used = 0;
  for await (const chunk of chunks)
    for (let at = 0; at < chunk.length;) {
      const n = chunk.copy(piece, used, at);
      used += n;
      at += n;
      if (used < bytes) continue;
      yield piece;
      used = 0;
      if (spare !== 'reuse') piece = next();
    }
  if (used) yield piece.subarray(0, used);
}

/** The development store: files under a folder (the CLI's default is `.local/sync-state/`). */
export class FileSyncStateStore implements SyncStateStore {
  readonly description: string;
  private readonly logs = new Map<string, number>();
  private readonly starting = new Set<string>();
  constructor(readonly dir: string) {
    this.description = `folder ${dir}`;
  }

  private path(tenant: string, name: string) {
    return join(this.dir, encodeURIComponent(tenant), name);
  }

  private async read(path: string): Promise<Buffer | undefined> {
    try {
      return await readFile(path);
    } catch (err) {
      if (enoent(err)) return undefined;
      throw err;
    }
  }

  private async replace(path: string, bytes: Buffer | string): Promise<void> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a process killed while writing leaves the previous file whole.
    await writeFile(`${path}.tmp`, bytes, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }

  async readSnapshot(tenant: string, stream: string) {
    const handle = await this.openIfExists(this.path(tenant, snapshotLeaf(stream)));
    if (!handle) return undefined;
    return (async function* () {
      // One buffer for every chunk: a pass reads its snapshot twice, and a new buffer per chunk left the whole
      // snapshot's size in garbage each time (29 MB at 1 M records), which raised the pass's peak RSS.
      const buffer = Buffer.allocUnsafe(256 * 1024);
      try {
        for (let read; (read = (await handle.read(buffer, 0, buffer.length, null)).bytesRead) > 0;)
          yield buffer.subarray(0, read);
      } finally {
        await handle.close();
      }
    })();
  }

  async writeSnapshot(tenant: string, stream: string, snapshot: AsyncIterable<Buffer>) {
    const path = this.path(tenant, snapshotLeaf(stream));
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a process killed while writing leaves the previous file whole. The log's entries come a
    // page at a time (a few KiB): gathered into one 1 MiB buffer they are a write per MiB, where one write each took
    // 40 ms of a 100 k-record pass. Each write ends before the next piece is gathered, so nothing is copied but into
    // that buffer (the copies an incremental pass made of a million kept entries raised its peak by ~13 MB).
    const handle = await open(`${path}.tmp`, 'w', 0o600);
    try {
      for await (const piece of gathered(snapshot, 1 << 20, 'reuse')) await handle.write(piece);
    } finally {
      await handle.close();
    }
    await rename(`${path}.tmp`, path);
  }

  async readCheckpoint(tenant: string, stream: string) {
    const handle = await this.openIfExists(this.path(tenant, checkpointLeaf(stream)));
    if (!handle) return undefined;
    // Closed when the stream ends or its reader stops early. Chunks of 256 KiB: with 1 MiB ones, read back at the end
    // of a pass of 1 M records, 8–11 MB of read chunks were garbage not yet collected at the peak; 4–7 MB with these.
    return handle.createReadStream({ highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>;
  }

  private async openIfExists(path: string): Promise<FileHandle | undefined> {
    try {
      return await open(path, 'r');
    } catch (err) {
      if (enoent(err)) return undefined;
      throw err;
    }
  }

  async appendCheckpoint(tenant: string, stream: string, record: Buffer, options: { create?: boolean } = {}) {
    const path = this.path(tenant, checkpointLeaf(stream));
    if (options.create) {
      await this.closeLog(path);
      return this.replace(path, record);
    }
    // One open descriptor per log and a synchronous append: a few microseconds, where opening the file or a
    // promise-based write per page cost ten times more (measured with bench/sync).
    let fd = this.logs.get(path);
    if (fd === undefined) {
      fd = openSync(path, 'a');
      this.logs.set(path, fd);
    }
    writeSync(fd, record);
  }

  private async closeLog(path: string) {
    const fd = this.logs.get(path);
    this.logs.delete(path);
    if (fd !== undefined) closeSync(fd);
  }

  async clearCheckpoint(tenant: string, stream: string) {
    const path = this.path(tenant, checkpointLeaf(stream));
    await this.closeLog(path);
    await rm(path, { force: true });
  }

  async readRun(tenant: string) {
    const bytes = await this.read(this.path(tenant, 'run.json'));
    return bytes && parseRun(bytes.toString('utf8'));
  }

  async writeRun(tenant: string, run: SyncRunRecord | undefined) {
    const path = this.path(tenant, 'run.json');
    if (run) await this.replace(path, JSON.stringify(run));
    else await rm(path, { force: true });
  }

  async readCatalog(tenant: string) {
    return (await this.read(this.path(tenant, 'catalog.json')))?.toString('utf8');
  }

  async writeCatalog(tenant: string, json: string) {
    await this.replace(this.path(tenant, 'catalog.json'), json);
  }

  // One process uses a folder (the CLI, a test): a set of tenants being started is enough.
  async exclusively<T>(tenant: string, work: () => Promise<T>): Promise<Exclusive<T>> {
    if (this.starting.has(tenant)) return { ran: false };
    this.starting.add(tenant);
    try {
      return { ran: true, value: await work() };
    } finally {
      this.starting.delete(tenant);
    }
  }
}

// A page's record rarely nears the 4 MiB block limit, but is split if it does.
const APPEND_BLOCK_MAX = 4 * 1024 * 1024;
/** What an append blob holds: the log goes on in a next segment when one is full. */
export const APPEND_BLOB_BLOCKS = 50_000;

/**
 * Azure Storage (Azurite locally), container `sync-state`: `{tenant}/{stream}.snapshot` (block blob, one
 * upload per run), `{tenant}/{stream}.checkpoint` (append blob, one append per page; past 50 000 appends the log
 * goes on in `….checkpoint.1`, `….checkpoint.2`, read in that order), `{tenant}/run.json`.
 */
export class BlobSyncStateStore implements SyncStateStore {
  readonly description = 'blob container sync-state';
  private readonly container: () => Promise<ContainerClient>;
  private readonly blocksPerSegment: number;
  /** Per checkpoint log this process appends to: its last segment and the blocks in it. */
  private readonly segments = new Map<string, { index: number; blocks: number }>();

  constructor(service: BlobServiceClient, options: { blocksPerSegment?: number } = {}) {
    this.container = lazyContainer(service, 'sync-state');
    this.blocksPerSegment = options.blocksPerSegment ?? APPEND_BLOB_BLOCKS;
  }

  /** The log's segments that exist, in order: `base` itself, then `base.1`, `base.2`, … */
  private async segmentsOf(base: string): Promise<Array<{ index: number; name: string }>> {
    const found: Array<{ index: number; name: string }> = [];
    for await (const item of (await this.container()).listBlobsFlat({ prefix: base })) {
      const index =
        item.name === base ? 0 : Number(/^\.(\d+)$/.exec(item.name.slice(base.length))?.[1] ?? -1);
      if (index >= 0) found.push({ index, name: item.name });
    }
    return found.sort((a, b) => a.index - b.index);
  }

  private static segmentName(base: string, index: number) {
    return index === 0 ? base : `${base}.${index}`;
  }

  private name(tenant: string, leaf: string) {
    return `${encodeURIComponent(tenant)}/${leaf}`;
  }

  /** What `read` gets from the blob, or undefined when there is none. */
  private async ifExists<T>(name: string, read: (blob: BlobClient) => Promise<T>): Promise<T | undefined> {
    try {
      return await read((await this.container()).getBlobClient(name));
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  private download(name: string): Promise<Buffer | undefined> {
    return this.ifExists(name, (blob) => downloadWhole(blob));
  }

  readSnapshot(tenant: string, stream: string) {
    return this.ifExists(
      this.name(tenant, snapshotLeaf(stream)),
      async (blob) =>
        ((await blob.download()).readableStreamBody ?? Readable.from([])) as AsyncIterable<Buffer>,
    );
  }

  async writeSnapshot(tenant: string, stream: string, snapshot: AsyncIterable<Buffer>) {
    const blob = (await this.container()).getBlockBlobClient(this.name(tenant, snapshotLeaf(stream)));
    // Staged in 4 MiB blocks and committed at the end: the previous snapshot stays whole until then. Each block is
    // gathered into a buffer of its own, which the upload holds while it stages it (a chunk is valid only until the
    // next is asked for): a copy of each byte, as joining the chunks of a block was; one block waits at a time. A
    // block's buffer, once staged, takes the next block: four of them for a whole snapshot, where a new one per
    // block left the collector ~20 MB more at 1 M records (docs/benchmarks.md, "The sync state in Blob Storage").
    const spare: Buffer[] = [];
    await pipeline(
      Readable.from(gathered(snapshot, SNAPSHOT_BLOCK_BYTES, spare), { highWaterMark: 1 }),
      new BlockUpload(blob, {
        blockBytes: SNAPSHOT_BLOCK_BYTES,
        inFlight: 2,
        blobHTTPHeaders: { blobContentType: 'application/octet-stream' },
        onStaged: (block) => {
          if (block.length === SNAPSHOT_BLOCK_BYTES) spare.push(block);
        },
      }),
    );
  }

  async readCheckpoint(tenant: string, stream: string) {
    const base = this.name(tenant, checkpointLeaf(stream));
    // A slice begins by reading the log: another instance may have appended since this one last did, so the next
    // append here looks for the last segment again.
    this.segments.delete(base);
    const segments = await this.segmentsOf(base);
    if (!segments.length) return undefined;
    const container = await this.container();
    return (async function* () {
      // One log: a record split over two segments reads whole. The SDK's download body resumes by itself after a
      // dropped connection.
      for (const { name } of segments) {
        const body = (await container.getBlobClient(name).download()).readableStreamBody;
        if (body) yield* body as AsyncIterable<Buffer>;
      }
    })();
  }

  async appendCheckpoint(tenant: string, stream: string, record: Buffer, options: { create?: boolean } = {}) {
    const base = this.name(tenant, checkpointLeaf(stream));
    const container = await this.container();
    if (options.create) {
      // The later segments of an older log go first, last one first: stopped half-way, what is left is the start of
      // that log, which reads as an older point of it.
      for (const { index, name } of (await this.segmentsOf(base)).reverse())
        if (index > 0) await container.getBlobClient(name).deleteIfExists();
      await container.getAppendBlobClient(base).create();
      this.segments.set(base, { index: 0, blocks: 0 });
    }
    let at = this.segments.get(base);
    if (!at) {
      // First append of this process to a log it did not start: its last segment and how full it is.
      const last = (await this.segmentsOf(base)).at(-1) ?? { index: 0, name: base };
      const properties = await container.getBlobClient(last.name).getProperties();
      at = { index: last.index, blocks: properties.blobCommittedBlockCount ?? 0 };
      this.segments.set(base, at);
    }
    let log = container.getAppendBlobClient(BlobSyncStateStore.segmentName(base, at.index));
    // A torn record (a split append interrupted) is ignored when the log is read.
    for (let offset = 0; offset < record.length; offset += APPEND_BLOCK_MAX) {
      const part = record.subarray(offset, offset + APPEND_BLOCK_MAX);
      if (at.blocks >= this.blocksPerSegment) {
        at.index++;
        at.blocks = 0;
        log = container.getAppendBlobClient(BlobSyncStateStore.segmentName(base, at.index));
        await log.create();
      }
      const answer = await log.appendBlock(part, part.length);
      at.blocks = answer.blobCommittedBlockCount ?? at.blocks + 1;
    }
  }

  async clearCheckpoint(tenant: string, stream: string) {
    const base = this.name(tenant, checkpointLeaf(stream));
    const container = await this.container();
    for (const { name } of (await this.segmentsOf(base)).reverse())
      await container.getBlobClient(name).deleteIfExists();
    this.segments.delete(base);
  }

  async readRun(tenant: string) {
    const bytes = await this.download(this.name(tenant, 'run.json'));
    return bytes && parseRun(bytes.toString('utf8'));
  }

  async writeRun(tenant: string, run: SyncRunRecord | undefined) {
    const blob = (await this.container()).getBlockBlobClient(this.name(tenant, 'run.json'));
    if (!run) {
      await blob.deleteIfExists();
      return;
    }
    const text = JSON.stringify(run);
    await blob.upload(text, Buffer.byteLength(text));
  }

  async readCatalog(tenant: string) {
    return (await this.download(this.name(tenant, 'catalog.json')))?.toString('utf8');
  }

  async writeCatalog(tenant: string, json: string) {
    const blob = (await this.container()).getBlockBlobClient(this.name(tenant, 'catalog.json'));
    await blob.upload(json, Buffer.byteLength(json), {
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
  }

  // Every instance of the app shares the container: a lease on `{tenant}/start.lock` is held by one at a time.
  async exclusively<T>(tenant: string, work: () => Promise<T>): Promise<Exclusive<T>> {
    const blob = (await this.container()).getBlockBlobClient(this.name(tenant, 'start.lock'));
    try {
      await blob.upload('', 0, { conditions: { ifNoneMatch: '*' } });
    } catch (err) {
      // 409: it exists and is leased; 412: it exists.
      if (statusOf(err) !== 409 && statusOf(err) !== 412) throw err;
    }
    const lease = blob.getBlobLeaseClient();
    try {
      await lease.acquireLease(START_LEASE_SECONDS);
    } catch (err) {
      if (statusOf(err) === 409) return { ran: false };
      throw err;
    }
    try {
      return { ran: true, value: await work() };
    } finally {
      await lease.releaseLease().catch(() => undefined); // it expires by itself
    }
  }
}
