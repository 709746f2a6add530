import type { BlobClient, BlobHTTPHeaders, BlockBlobClient } from '@azure/storage-blob';
import { createHash, randomBytes } from 'node:crypto';
import { addAbortSignal, Writable } from 'node:stream';

/**
 * A block's MD5, sent with it (Put Block's `Content-MD5`): the service checks the bytes it received against it and
 * refuses the block when they differ, so a block damaged on the way fails its upload instead of being committed.
 * Without it the service computes a CRC-64 of every block for its answer — Azurite does so in JavaScript, a byte at a
 * time, on the cores a local run shares with the tenant's sandbox (docs/benchmarks.md).
 */
export const blockMd5 = (body: Uint8Array): Buffer => createHash('md5').update(body).digest();

/**
 * A blob's bytes in one request. The SDK's `downloadToBuffer` asks for the blob's properties first, to learn its
 * size: two round trips before an import's first item could be sent (docs/benchmarks.md, "Import"). The stream is
 * read again from where it broke, as `downloadToBuffer`'s would be.
 */
export async function downloadWhole(
  blob: BlobClient,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Buffer> {
  const answer = await blob.download(0, undefined, { abortSignal: options.abortSignal, maxRetryRequests: 5 });
  const chunks: Buffer[] = [];
  for await (const chunk of answer.readableStreamBody ?? []) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface BlockUploadOptions {
  /** A block is staged once this many bytes have come (the last may be smaller). */
  blockBytes: number;
  /** Blocks being staged at once; a write waits for a free one. */
  inFlight: number;
  blobHTTPHeaders?: BlobHTTPHeaders;
  abortSignal?: AbortSignal;
  /** Called with a block's bytes once the service has them: a writer that made that buffer may fill it again. */
  onStaged?: (block: Buffer) => void;
  /**
   * At the stream's end: the blocks that come before this upload's (staged by earlier uploads of the same blob — an
   * export's earlier slices), to commit with them; or `'none'` to stage only, leaving the commit to a later upload
   * (`ids` says what this one staged). Default: this upload's blocks alone.
   */
  commitAfter?: () => string[] | 'none';
}

/**
 * A block blob written as a stream: the bytes written are staged in blocks of `blockBytes`, each with its MD5
 * (`blockMd5`), at most `inFlight` at once, and the block list is committed when the stream ends — so a blob that
 * existed stays whole until then, and an upload destroyed before its end (an error, an abandoned file) is never
 * committed: its blocks are dropped by the service with the next commit. Block ids carry a prefix of their own
 * upload's, so a late block of an abandoned upload cannot take the place of one of the next. A blob holds at most
 * 50 000 blocks: `blockBytes` bounds its size.
 * A chunk that makes a block by itself is sent as it is, not copied (the Parquet writer's ~1 MB pieces): as with any
 * Writable (fs's too), a writer must not change a chunk's memory once it has written it.
 */
export class BlockUpload extends Writable {
  private readonly staged: string[] = [];
  private readonly prefix = randomBytes(6).toString('hex');
  private readonly staging = new Set<Promise<void>>();
  /** Aborts what is on its way when the upload is destroyed — also by `abortSignal`, through `addAbortSignal`. */
  private readonly stop = new AbortController();
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private failure: unknown;

  private readonly blob: Promise<BlockBlobClient>;

  /**
   * `blob` may be on its way (its container being made sure of while the first bytes are produced): the first block
   * waits for it, and should it fail the upload fails at once.
   */
  constructor(
    blob: BlockBlobClient | Promise<BlockBlobClient>,
    private readonly options: BlockUploadOptions,
  ) {
    super({ highWaterMark: options.blockBytes });
    this.blob = Promise.resolve(blob);
    this.blob.catch((err: unknown) => {
      this.failure ??= err;
      this.destroy(err as Error);
    });
    // Aborted, the upload is destroyed at once, whether or not a block is on its way (the writer may be waiting for
    // its source), and what is on its way with it.
    if (options.abortSignal) addAbortSignal(options.abortSignal, this);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.options.blockBytes) return callback();
    this.stage();
    this.whenFree(this.options.inFlight).then(() => callback(), callback);
  }

  /** The ids of the blocks this upload staged, in order (each id as long as any other upload's). */
  get ids(): readonly string[] {
    return this.staged;
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.pendingBytes) this.stage();
    this.whenFree(1)
      .then(() => this.blob)
      .then((blob) => {
        const before = this.options.commitAfter?.() ?? [];
        if (before === 'none') return undefined;
        return blob.commitBlockList([...before, ...this.staged], {
          blobHTTPHeaders: this.options.blobHTTPHeaders,
          abortSignal: this.stop.signal,
        });
      })
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Blocks still being staged are not waited for: without a commit they are nothing.
    this.stop.abort(error ?? new Error('the upload was stopped before its end'));
    callback(error);
  }

  private stage(): void {
    const body = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    // Ids of one blob must all be as long: the upload's prefix and a five-digit number (< 50 000 blocks).
    const id = Buffer.from(`${this.prefix}-${String(this.staged.length).padStart(5, '0')}`).toString(
      'base64',
    );
    this.staged.push(id);
    const staged: Promise<void> = this.blob
      .then((blob) =>
        blob.stageBlock(id, body, body.length, {
          transactionalContentMD5: blockMd5(body),
          abortSignal: this.stop.signal,
        }),
      )
      .then(
        () => {
          this.staging.delete(staged);
          this.options.onStaged?.(body);
        },
        (err: unknown) => {
          this.staging.delete(staged);
          this.failure ??= err;
          // At once, not at the next block: a text export's next block may be 100 k records away.
          this.destroy(err as Error);
        },
      );
    this.staging.add(staged);
  }

  /** Resolves once fewer than `slots` blocks are being staged; rejects with the first block that failed. */
  private async whenFree(slots: number): Promise<void> {
    while (this.staging.size >= slots && !this.failure) await Promise.race(this.staging);
    if (this.failure) throw this.failure;
  }
}
