import {
  BlobSASPermissions,
  generateBlobSASQueryParameters,
  SASProtocol,
  type BlobServiceClient,
  type ContainerClient,
  type UserDelegationKey,
} from '@azure/storage-blob';
import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { statusOf } from '../errors';
import { BlockUpload, downloadWhole } from '../state/blocks';
import { lazyContainer } from '../state/lazy';
import { contentTypeOf, extensionOf, type ExportFormat } from './file';

export const EXPORTS_CONTAINER = 'exports';
/** How long a download link works. */
export const LINK_SECONDS = 15 * 60;
/** Links start a little in the past: the storage service's clock may be behind ours. */
const SKEW_SECONDS = 5 * 60;

export interface DownloadLink {
  name: string;
  url: string;
  expiresAt: string;
}

/** One file's upload: a bounded pipe into staged blocks, committed at its end (or abandoned, never committed). */
export interface FileUpload {
  pipe: BlockUpload;
  /** Settles when the upload has committed (or failed). */
  done: Promise<void>;
  /** Gives the upload up: its blocks are never committed. */
  abandon(): Promise<void>;
}

/**
 * Export files in Blob Storage under `exports/{id}/` — it only uploads: a file streamed into staged blocks (so
 * memory does not grow with the export), each stream's slice record beside it, the manifest — and hands them out as read-only user-delegation SAS links for one
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

  /** `{id}/{stream}.{ext}`. */
  fileName(id: string, stream: string, file: { format: ExportFormat; gzip: boolean }): string {
    return `${id}/${stream}.${extensionOf(file.format, file.gzip)}`;
  }

  /**
   * An upload of staged blocks to `name`, committed at its end after `commitAfter()`'s blocks (an export's earlier
   * slices; `'none'` stages only). A failure is told to `onFailed` (the writer then stops) unless it was abandoned.
   */
  upload(
    name: string,
    file: { stream: string; format: ExportFormat; gzip: boolean },
    options: {
      abortSignal: AbortSignal;
      commitAfter: () => string[] | 'none';
      onFailed: (err: unknown) => void;
    },
  ): FileUpload {
    // Not waited for: the container is made sure of (a round trip, and the Storage SDK's first request on a fresh
    // instance) while the first pages are read; the first block waits for it.
    const blob = this.container().then((container) => container.getBlockBlobClient(name));
    // A Parquet file's pieces come ~1 MB at a time while it is written (FILE_PIECE_BYTES, shared/formats/parquet/):
    // each piece is a block (four in flight), and only the last waits for the file's end. Text is streamed as it is
    // encoded, in 4 MiB blocks, two in flight. 50 000 blocks: ~46 GiB of Parquet, ~195 GiB of text.
    const [blockBytes, inFlight] = file.format === 'parquet' ? [1_000_000, 4] : [4 << 20, 2];
    const abandon = new AbortController();
    const pipe = new BlockUpload(blob, {
      blockBytes,
      inFlight,
      blobHTTPHeaders: {
        blobContentType: contentTypeOf(file.format, file.gzip),
        blobContentDisposition: `attachment; filename="${file.stream}.${extensionOf(file.format, file.gzip)}"`,
      },
      abortSignal: AbortSignal.any([options.abortSignal, abandon.signal]),
      commitAfter: options.commitAfter,
    });
    const done = finished(pipe).catch((err: unknown) => {
      if (!abandon.signal.aborted) options.onFailed(err);
      throw err;
    });
    done.catch(() => undefined); // awaited by the writer, unless abandoned
    return {
      pipe,
      done,
      abandon: async () => {
        abandon.abort(); // destroys its upload (its `abortSignal`): never committed
        await done.catch(() => undefined);
      },
    };
  }

  /** A stream's slice record (`{id}/{stream}.slices.json`), undefined when there is none. */
  async readSlices(id: string, stream: string): Promise<unknown> {
    const blob = (await this.container()).getBlockBlobClient(`${id}/${stream}.slices.json`);
    try {
      return JSON.parse((await downloadWhole(blob)).toString('utf8'));
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async saveSlices(id: string, stream: string, state: object): Promise<void> {
    const text = JSON.stringify(state);
    await (
      await this.container()
    )
      .getBlockBlobClient(`${id}/${stream}.slices.json`)
      .upload(text, Buffer.byteLength(text), { blobHTTPHeaders: { blobContentType: 'application/json' } });
  }

  /** The sha256 of a committed blob, read back as a stream; its length must be what the slices wrote. */
  async sha256Of(name: string, expectedBytes: number, abortSignal?: AbortSignal): Promise<string> {
    const answer = await (
      await this.container()
    )
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
