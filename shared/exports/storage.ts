import {
  BlobSASPermissions,
  generateBlobSASQueryParameters,
  SASProtocol,
  type BlobServiceClient,
  type BlockBlobClient,
  type ContainerClient,
  type UserDelegationKey,
} from '@azure/storage-blob';
import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { z } from 'zod';
import type { TenantGraphqlClient } from '../graphql/client';
import { statusOf } from '../errors';
import { BlockUpload, downloadWhole } from '../state/blocks';
import { lazyContainer } from '../state/lazy';
import type { StreamDefinition } from '../streams';
import { extensionOf, type ExportFormat } from './formats';
import type { StoredFile } from './orchestration';
import { writeExportStream, type ExportFile } from './write';

export const EXPORTS_CONTAINER = 'exports';
/** How long a download link works. */
export const LINK_SECONDS = 15 * 60;
/** Links start a little in the past: the storage service's clock may be behind ours. */
const SKEW_SECONDS = 5 * 60;

const CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  parquet: 'application/vnd.apache.parquet',
};

export interface DownloadLink {
  name: string;
  url: string;
  expiresAt: string;
}

/**
 * What the slices of one stream's file have done so far, kept beside it (`{id}/{stream}.slices.json`): where the
 * next slice starts, the blocks staged before it (committed by the last slice, with its own), and — once the last
 * slice has committed — the file, so a slice run again (a replayed or retried activity) answers what it answered.
 */
const sliceStateSchema = z.object({
  /** Slices done: the next slice's number. */
  slices: z.number().int().min(0),
  cursor: z.string().nullable(),
  written: z.boolean(),
  /** The page size the tenant let the listing go on with, when it refused the stream's own. */
  pageSize: z.number().int().min(1).optional(),
  records: z.number().int().min(0),
  bytes: z.number().int().min(0),
  blocks: z.array(z.string()),
  file: z
    .object({
      stream: z.string(),
      name: z.string(),
      records: z.number(),
      bytes: z.number(),
      sha256: z.string(),
      slices: z.number().int().optional(),
    })
    .optional(),
});
type SliceState = z.infer<typeof sliceStateSchema>;

/** One slice's outcome: the stored file, or where the stream stands with more to write. */
export type SliceOutcome =
  { done: StoredFile } | { more: { stream: string; slice: number; records: number } };

/**
 * Export files in Blob Storage under `exports/{id}/`: written streaming (a bounded pipe into staged blocks,
 * so memory does not grow with the export), and handed out as read-only user-delegation SAS links for one
 * blob each, valid 15 minutes — signed with a key from the identity, never with an account key.
 */
export class ExportStorage {
  private readonly container: () => Promise<ContainerClient>;
  private key?: { value: UserDelegationKey; expiresMs: number };

  constructor(
    service: BlobServiceClient,
    /** A client authenticated with an identity (see `delegationService`), for user-delegation keys. */
    private readonly delegation: () => BlobServiceClient,
  ) {
    this.container = lazyContainer(service, EXPORTS_CONTAINER);
  }

  /**
   * One slice of a stream's file: from where the slices before it stopped, until `deadlineMs` (text formats; a
   * Parquet file is written in one slice). Every slice but the last only stages its blocks; the last commits them all
   * in order, so the blob appears whole or not at all, and a slice that failed or stopped part-way leaves nothing
   * that counts (its blocks are never committed; the slice runs again from the same cursor). A file of one slice is
   * hashed as it is written; one of several is read back once committed for its sha256.
   */
  async writeSlice(
    graphql: TenantGraphqlClient,
    stream: StreamDefinition,
    task: { id: string; format: ExportFormat; gzip: boolean; slice?: number },
    options: { abortSignal?: AbortSignal; deadlineMs?: number; clock?: { now(): number } } = {},
  ): Promise<SliceOutcome> {
    const slice = task.slice ?? 0;
    const container = await this.container();
    const stateBlob = container.getBlockBlobClient(`${task.id}/${stream.name}.slices.json`);
    const fresh: SliceState = { slices: 0, cursor: null, written: false, records: 0, bytes: 0, blocks: [] };
    const state: SliceState = await downloadWhole(stateBlob).then(
      (buffer) => sliceStateSchema.parse(JSON.parse(buffer.toString('utf8'))),
      (err: unknown) => {
        // None yet: the stream's first slice (a file of one slice never writes one).
        if (slice === 0 && statusOf(err) === 404) return fresh;
        throw err;
      },
    );
    // Run again (a replayed or retried activity): what it did is in the state.
    if (slice < state.slices)
      return state.file && slice === state.slices - 1
        ? { done: state.file }
        : { more: { stream: stream.name, slice, records: state.records } };
    if (slice > state.slices)
      throw new Error(`export ${task.id}: slice ${slice} of ${stream.name} before slice ${state.slices}`);
    let staged: readonly string[] = [];
    const written = await this.writePart(graphql, stream, task, {
      abortSignal: options.abortSignal,
      deadlineMs: options.deadlineMs,
      clock: options.clock,
      continueFrom:
        slice > 0 ? { cursor: state.cursor, written: state.written, pageSize: state.pageSize } : undefined,
      // Committed by the last slice only, after the blocks of every slice before it.
      commitAfter: state.blocks,
      onStaged: (ids) => (staged = ids),
    });
    const next: SliceState = {
      slices: slice + 1,
      cursor: written.stoppedAt?.cursor ?? null,
      written: written.stoppedAt?.written ?? true,
      ...(written.stoppedAt?.pageSize ? { pageSize: written.stoppedAt.pageSize } : {}),
      records: state.records + written.records,
      bytes: state.bytes + written.bytes,
      blocks: [...state.blocks, ...staged],
    };
    if (written.stoppedAt) {
      await this.saveSlices(stateBlob, next);
      return { more: { stream: stream.name, slice, records: next.records } };
    }
    const file: StoredFile =
      slice === 0
        ? { ...written.file, slices: 1 }
        : {
            stream: stream.name,
            name: written.file.name,
            records: next.records,
            bytes: next.bytes,
            sha256: await this.sha256Of(container, written.file.name, next.bytes, options.abortSignal),
            slices: slice + 1,
          };
    // Only a file of several slices needs remembering: one of a single slice is written again whole if run again.
    if (slice > 0) await this.saveSlices(stateBlob, { ...next, file });
    return { done: file };
  }

  private async saveSlices(blob: BlockBlobClient, state: SliceState): Promise<void> {
    const text = JSON.stringify(state);
    await blob.upload(text, Buffer.byteLength(text), {
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
  }

  /** The sha256 of a committed blob, read back as a stream; its length must be what the slices wrote. */
  private async sha256Of(
    container: ContainerClient,
    name: string,
    expectedBytes: number,
    abortSignal?: AbortSignal,
  ): Promise<string> {
    const answer = await container
      .getBlobClient(name)
      .download(0, undefined, { abortSignal, maxRetryRequests: 5 });
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of answer.readableStreamBody ?? []) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    if (bytes !== expectedBytes)
      throw new Error(`${name}: ${bytes} bytes committed where the slices wrote ${expectedBytes}`);
    return hash.digest('hex');
  }

  /** A stream's whole file in one go (what a slice of an export with time enough does). */
  async writeStream(
    graphql: TenantGraphqlClient,
    stream: StreamDefinition,
    task: { id: string; format: ExportFormat; gzip: boolean },
    options: { abortSignal?: AbortSignal } = {},
  ): Promise<StoredFile> {
    return (await this.writePart(graphql, stream, task, options)).file;
  }

  /** A file, or one slice's part of it: staged, and committed after `commitAfter` unless it stopped early. */
  private async writePart(
    graphql: TenantGraphqlClient,
    stream: StreamDefinition,
    task: { id: string; format: ExportFormat; gzip: boolean },
    options: {
      abortSignal?: AbortSignal;
      deadlineMs?: number;
      clock?: { now(): number };
      continueFrom?: { cursor: string | null; written: boolean; pageSize?: number };
      /** The blocks committed before this upload's (an export's earlier slices); none staged when it stops early. */
      commitAfter?: string[];
      /** The ids of the blocks this upload staged, once it has ended. */
      onStaged?: (ids: readonly string[]) => void;
    } = {},
  ): Promise<{ file: StoredFile; records: number; bytes: number; stoppedAt?: ExportFile['stoppedAt'] }> {
    const name = `${task.id}/${stream.name}.${extensionOf(task.format, task.gzip)}`;
    // Not waited for: the container is made sure of (a round trip, and the Storage SDK's first request on a fresh
    // instance) while the first pages are read; the first block waits for it.
    const blob = this.container().then((container) => container.getBlockBlobClient(name));
    const stop = new AbortController();
    const signal = options.abortSignal ? AbortSignal.any([stop.signal, options.abortSignal]) : stop.signal;
    const headers = {
      blobContentType:
        task.gzip && task.format !== 'parquet' ? 'application/gzip' : CONTENT_TYPES[task.format],
      blobContentDisposition: `attachment; filename="${stream.name}.${extensionOf(task.format, task.gzip)}"`,
    };
    // A Parquet file's pieces come ~1 MB at a time while it is written (FILE_PIECE_BYTES, shared/formats/parquet/hyparquet-adapter.ts): each
    // piece is a block (four in flight), sent as it is, and only the last waits for the file's end — with 4 MB blocks
    // the last 4 MB did, 65-107 ms of a 100 k export on Azurite against 15-29 (docs/benchmarks.md, "Export"). 50 000
    // blocks of 1 MB: ~46 GiB of Parquet. Text is streamed as it is encoded, in 4 MiB blocks, two in flight (~195 GiB).
    const [blockBytes, inFlight] = task.format === 'parquet' ? [1_000_000, 4] : [4 << 20, 2];
    // One upload of staged blocks, committed at its end — or, should a Parquet export start over (a page changed its
    // columns after some of the file went out), another after it: the first is abandoned, never committed.
    // Known before the writer's output ends (and the upload commits): a slice that stopped early stages only.
    let stopped = false;
    const upload = () => {
      const abandon = new AbortController();
      const pipe = new BlockUpload(blob, {
        blockBytes,
        inFlight,
        blobHTTPHeaders: headers,
        abortSignal: AbortSignal.any([signal, abandon.signal]),
        commitAfter: () => (stopped ? 'none' : (options.commitAfter ?? [])),
      });
      const done = finished(pipe).catch((err: unknown) => {
        if (!abandon.signal.aborted) stop.abort(err);
        throw err;
      });
      done.catch(() => undefined); // awaited below, unless abandoned
      return { pipe, done, abandon };
    };
    let current = upload();
    const restart = async () => {
      const old = current;
      old.abandon.abort(); // destroys its upload (its `abortSignal`): never committed
      await old.done.catch(() => undefined);
      current = upload();
      return current.pipe;
    };
    const writing = writeExportStream(graphql, stream, current.pipe, {
      ...task,
      abortSignal: signal,
      restart,
      continueFrom: options.continueFrom,
      deadlineMs: options.deadlineMs,
      clock: options.clock,
      onStop: () => (stopped = true),
    }).catch((err: unknown) => {
      current.pipe.destroy(err as Error);
      throw err;
    });
    const [written] = await Promise.allSettled([writing]);
    const [uploaded] = await Promise.allSettled([current.done]);
    // The reading side's error says more than the upload's "aborted", and the other way round.
    if (written.status === 'rejected' && !stop.signal.aborted) throw written.reason;
    if (uploaded.status === 'rejected') throw uploaded.reason;
    if (written.status === 'rejected') throw written.reason;
    options.onStaged?.(current.pipe.ids);
    const { records, bytes, sha256, stoppedAt } = written.value;
    return {
      file: { stream: stream.name, name, records, bytes, sha256 },
      records,
      bytes,
      ...(stoppedAt ? { stoppedAt } : {}),
    };
  }

  async writeManifest(id: string, manifest: object): Promise<string> {
    const name = `${id}/manifest.json`;
    const text = `${JSON.stringify(manifest, null, 2)}\n`;
    await (
      await this.container()
    )
      .getBlockBlobClient(name)
      .upload(text, Buffer.byteLength(text), { blobHTTPHeaders: { blobContentType: 'application/json' } });
    return name;
  }

  /** One read-only link per blob, valid LINK_SECONDS from `nowMs`. */
  async links(names: string[], nowMs: number): Promise<DownloadLink[]> {
    const service = this.delegation();
    const startsOn = new Date(nowMs - SKEW_SECONDS * 1000);
    const expiresOn = new Date(nowMs + LINK_SECONDS * 1000);
    // One key serves many links: reuse it while it outlives the links it signs.
    if (!this.key || this.key.expiresMs < expiresOn.getTime()) {
      const keyExpires = new Date(nowMs + 3600 * 1000);
      this.key = {
        value: await service.getUserDelegationKey(startsOn, keyExpires),
        expiresMs: keyExpires.getTime(),
      };
    }
    const key = this.key.value;
    return names.map((name) => {
      const sas = generateBlobSASQueryParameters(
        {
          containerName: EXPORTS_CONTAINER,
          blobName: name,
          permissions: BlobSASPermissions.parse('r'),
          startsOn,
          expiresOn,
          protocol: SASProtocol.Https,
        },
        key,
        service.accountName,
      ).toString();
      const url = `${service.getContainerClient(EXPORTS_CONTAINER).getBlobClient(name).url}?${sas}`;
      return { name, url, expiresAt: expiresOn.toISOString() };
    });
  }
}
