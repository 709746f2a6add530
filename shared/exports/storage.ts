import {
  BlobSASPermissions,
  generateBlobSASQueryParameters,
  SASProtocol,
  type BlobServiceClient,
  type ContainerClient,
  type UserDelegationKey,
} from '@azure/storage-blob';
import { finished } from 'node:stream/promises';
import type { TenantGraphqlClient } from '../graphql/client';
import { BlockUpload } from '../state/blocks';
import { lazyContainer } from '../state/lazy';
import type { StreamDefinition } from '../streams';
import { extensionOf, type ExportFormat } from './formats';
import type { StoredFile } from './orchestration';
import { writeExportStream } from './write';

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

  async writeStream(
    graphql: TenantGraphqlClient,
    stream: StreamDefinition,
    task: { id: string; format: ExportFormat; gzip: boolean },
    options: { abortSignal?: AbortSignal } = {},
  ): Promise<StoredFile> {
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
    // A Parquet file's pieces come ~1 MB at a time while it is written (FILE_PIECE_BYTES, shared/sync/parquet.ts): each
    // piece is a block (four in flight), sent as it is, and only the last waits for the file's end — with 4 MB blocks
    // the last 4 MB did, 65-107 ms of a 100 k export on Azurite against 15-29 (docs/benchmarks.md, "Export"). 50 000
    // blocks of 1 MB: ~46 GiB of Parquet. Text is streamed as it is encoded, in 4 MiB blocks, two in flight (~195 GiB).
    const [blockBytes, inFlight] = task.format === 'parquet' ? [1_000_000, 4] : [4 << 20, 2];
    // One upload of staged blocks, committed at its end — or, should a Parquet export start over (a page changed its
    // columns after some of the file went out), another after it: the first is abandoned, never committed.
    const upload = () => {
      const abandon = new AbortController();
      const pipe = new BlockUpload(blob, {
        blockBytes,
        inFlight,
        blobHTTPHeaders: headers,
        abortSignal: AbortSignal.any([signal, abandon.signal]),
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
    const { records, bytes, sha256 } = written.value;
    return { stream: stream.name, name, records, bytes, sha256 };
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
