import type { BlobClient, BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { statusOf } from '../errors';
import { BlockUpload, downloadWhole } from '../state/blocks';
import { lazyContainer } from '../state/lazy';
import { parseRunRecord, type SyncRunRecord } from './run-record';
import { START_LEASE_SECONDS, type Exclusive, type SyncStateStore } from './sync-state';
import { checkpointLeaf, gathered, SNAPSHOT_BLOCK_BYTES, snapshotLeaf } from './state-leaves';

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
    // block's buffer, once staged, takes the next block: four of them for a whole snapshot (docs/benchmarks.md, "The
    // sync state in Blob Storage").
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
    return bytes && parseRunRecord(bytes.toString('utf8'));
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
