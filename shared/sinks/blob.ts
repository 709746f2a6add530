import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { partOf } from '../config';
import { SINK_OUTPUT, type SyncFormat } from './output';
import { blockMd5 } from '../state/blocks';
import { lazyContainer } from '../state/lazy';
import type { Change, RejectedPolicy, StreamCounts } from '../changes';
import { ndjson, pageName, parquet } from './ndjson';
import type { ChangeBatch, ChangeSink, RunManifest, SinkModule, WriteOutcome } from './types';
import { isRunFolder, linesWithout, type EraseOutcome } from './erase';
import { jsonPages, linesOf } from '../formats/lines';

export const SYNC_CONTAINER = 'sync-changes';

/**
 * `blob`: container `sync-changes`, `{tenant}/{runId}/{stream}.ndjson.gz` and `{tenant}/{runId}/manifest.json`.
 * Each page is a staged block (a gzip member) named after its page number, so a repeated page replaces
 * itself; the stream's file is committed when its pass completes.
 */
export class BlobSink implements ChangeSink {
  readonly description = `blob container ${SYNC_CONTAINER}`;
  private readonly container: () => Promise<ContainerClient>;

  constructor(
    service: BlobServiceClient,
    readonly format: SyncFormat = 'ndjson',
    readonly rejected: RejectedPolicy = 'fail',
  ) {
    this.container = lazyContainer(service, SYNC_CONTAINER);
  }

  private blob(tenant: string, runId: string, leaf: string) {
    return this.container().then((c) =>
      c.getBlockBlobClient(`${encodeURIComponent(tenant)}/${runId}/${leaf}`),
    );
  }

  private static blockId(page: number) {
    return Buffer.from(`page-${pageName(page)}`).toString('base64');
  }

  async write(batch: ChangeBatch, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    const blob = await this.blob(batch.tenant, batch.runId, `${batch.stream}.ndjson.gz`);
    const body = gzipPage(ndjson(batch.changes));
    await blob.stageBlock(BlobSink.blockId(batch.page), body, body.length, {
      transactionalContentMD5: blockMd5(body),
      abortSignal: options.abortSignal,
    });
  }

  async endStream(
    tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    _counts?: StreamCounts,
    options: { fields?: readonly string[] } = {},
  ): Promise<WriteOutcome | void> {
    const blob = await this.blob(tenant, runId, `${stream}.ndjson.gz`);
    const blobHTTPHeaders = { blobContentType: 'application/gzip' };
    if (changedPages.length)
      await blob.commitBlockList(changedPages.map(BlobSink.blockId), { blobHTTPHeaders });
    else {
      const empty = gzipSync('');
      await blob.upload(empty, empty.length, { blobHTTPHeaders });
    }
    if (this.format === 'parquet') {
      // `{stream}.parquet` beside the NDJSON, made from it by streaming (read twice), through a temporary file.
      const dir = await mkdtemp(join(tmpdir(), 'ti-parquet-'));
      try {
        const file = join(dir, `${stream}.parquet`);
        const pages = async function* () {
          const download = await blob.download();
          const text = (download.readableStreamBody as NodeJS.ReadableStream).pipe(createGunzip());
          yield* jsonPages<Change>(linesOf(text as AsyncIterable<Buffer>));
        };
        const quarantineFile = join(dir, `${stream}.quarantine.ndjson`);
        const { rejected } = await parquet().writeChangesParquet(pages, file, {
          stream,
          rejected: this.rejected,
          quarantineFile,
          fields: options.fields,
        });
        const target = await this.blob(tenant, runId, `${stream}.parquet`);
        await target.uploadFile(file, {
          blobHTTPHeaders: { blobContentType: 'application/vnd.apache.parquet' },
        });
        if (rejected) {
          const aside = await this.blob(tenant, runId, `${stream}.quarantine.ndjson`);
          await aside.uploadFile(quarantineFile, {
            blobHTTPHeaders: { blobContentType: 'application/x-ndjson' },
          });
        }
        return { rejected };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }

  /** Nothing held open: its clients close with the process. */
  async close(): Promise<void> {}

  /**
   * Every run's files of the stream without the key's changes: each blob read, written again without them and
   * uploaded over itself (a page staged for a run still going is left to that run, which the key's next pass follows).
   * Blob versioning or soft delete on the account keeps the earlier blob for their retention (docs/personal-data.md).
   */
  async erase(
    tenant: string,
    stream: string,
    key: string,
    options: { abortSignal?: AbortSignal } = {},
  ): Promise<EraseOutcome> {
    const container = await this.container();
    const erased: EraseOutcome['erased'] = [];
    const leaves = [`${stream}.ndjson.gz`, `${stream}.quarantine.ndjson`, `${stream}.parquet`];
    for await (const item of container.listBlobsFlat({
      prefix: `${encodeURIComponent(tenant)}/`,
      abortSignal: options.abortSignal,
    })) {
      const parts = item.name.split('/');
      if (parts.length !== 3 || !isRunFolder(parts[1]) || !leaves.includes(parts[2])) continue;
      const leaf = parts[2];
      const blob = container.getBlockBlobClient(item.name);
      const body = await blob.downloadToBuffer(0, undefined, { abortSignal: options.abortSignal });
      if (leaf.endsWith('.parquet')) {
        const dir = await mkdtemp(join(tmpdir(), 'ti-erase-'));
        try {
          const file = join(dir, leaf);
          await writeFile(file, body);
          const removed = await parquet().eraseFromChangesParquet(file, key);
          if (!removed) continue;
          await blob.uploadFile(file, {
            blobHTTPHeaders: { blobContentType: 'application/vnd.apache.parquet' },
            abortSignal: options.abortSignal,
          });
          erased.push({ place: `${this.description}/${item.name}`, count: removed });
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
        continue;
      }
      const gz = leaf.endsWith('.gz');
      const left = linesWithout((gz ? gunzipSync(body) : body).toString('utf8'), key);
      if (!left.removed) continue;
      const next = gz ? gzipSync(left.text) : Buffer.from(left.text);
      await blob.upload(next, next.length, {
        blobHTTPHeaders: { blobContentType: gz ? 'application/gzip' : 'application/x-ndjson' },
        abortSignal: options.abortSignal,
      });
      erased.push({ place: `${this.description}/${item.name}`, count: left.removed });
    }
    return { erased };
  }

  /** `{tenant}/{runId}/{stream}.ndjson.gz` (and `.parquet`): the stream's name, as a download to a folder holds it. */
  names(stream: string): string[] {
    return [`${this.description}/${stream}`];
  }

  readonly ownNames: readonly string[] = [];

  async finish(manifest: RunManifest): Promise<void> {
    const blob = await this.blob(manifest.tenant, manifest.runId, 'manifest.json');
    const text = `${JSON.stringify(manifest, null, 2)}\n`;
    await blob.upload(text, Buffer.byteLength(text), {
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
  }
}

/**
 * One page's lines, gzipped into a buffer of about their size: zlib's default output chunk is 16 KiB, which a page of
 * one change would keep whole until the collector ran (docs/benchmarks.md).
 */
const gzipPage = (text: string) =>
  gzipSync(text, { chunkSize: Math.min(16 * 1024, Math.max(64, Buffer.byteLength(text) + 64)) });

const storageService = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('../state/blob-service') as typeof import('../state/blob-service');

export const blobSink: SinkModule = {
  kind: 'blob',
  usage: 'blob',
  argument: z.undefined({ error: 'takes nothing after "blob"' }),
  requires: (_spec, settings) =>
    settings.storage ? undefined : 'the blob sink needs storage (AzureWebJobsStorage)',
  create: (_spec, context) =>
    new BlobSink(
      context.clients?.blobService?.() ?? storageService().blobService(context.config),
      partOf(context.config, SINK_OUTPUT).format,
      partOf(context.config, SINK_OUTPUT).rejectedRecords,
    ),
  // Reaching Blob Storage with the app's identity is the storage check's; nothing else is the sink's own.
  doctor: async () => ({ state: 'ok', found: 'Blob Storage: see the storage check' }),
};

declare module './types' {
  interface SinkClients {
    /** Blob Storage, for the blob and delta sinks. */
    blobService: () => BlobServiceClient;
  }
}
