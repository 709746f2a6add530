import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createGunzip, gzipSync } from 'node:zlib';
import type { Clock } from '../clock';
import { ConfigError } from '../errors';
import { SignedPoster, type SignedPostOptions } from '../net/webhook';
import { lazyContainer } from '../state/blob-service';
import { changeJson, type Change } from './changes';
import type { StreamCounts } from './counts';

/** One page's changes. (runId, stream, page) identifies it: writing it again replaces it, never adds to it. */
export interface ChangeBatch {
  tenant: string;
  runId: string;
  stream: string;
  page: number;
  changes: Change[];
}

export interface RunManifest {
  tenant: string;
  runId: string;
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  streams: Record<string, { ok: boolean; counts: StreamCounts; error?: string }>;
  /** Why a run whose streams all completed is still not done (its manifest could not be delivered). */
  error?: string;
}

/**
 * Where changes go. Every call is idempotent, because a run resumed from its checkpoint repeats the page
 * that was in flight. A write that throws fails the page; the checkpoint is not advanced past it.
 */
export interface ChangeSink {
  readonly description: string;
  write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** The stream's pass is complete: `changedPages` are the pages that had changes, in order. */
  endStream(
    tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    counts: StreamCounts,
  ): Promise<void>;
  finish(manifest: RunManifest): Promise<void>;
}

const ndjson = (changes: Change[]) => changes.map((c) => `${changeJson(c)}\n`).join('');

/** How a sink's change files are written: NDJSON (default) or, with SYNC_FORMAT=parquet, also Parquet. */
export type SyncFormat = 'ndjson' | 'parquet';

const parquet = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('./parquet') as typeof import('./parquet');
const pageName = (page: number) => String(page).padStart(8, '0');

/** `dir:PATH`: `{runId}/{stream}.ndjson` and `{runId}/manifest.json` — for the CLI and for looking. */
export class DirectorySink implements ChangeSink {
  readonly description: string;
  constructor(
    readonly dir: string,
    readonly format: SyncFormat = 'ndjson',
  ) {
    this.description = `folder ${dir}${format === 'parquet' ? ' (Parquet)' : ''}`;
  }

  private parts(runId: string, stream: string) {
    return join(this.dir, runId, `${stream}.parts`);
  }

  async write(batch: ChangeBatch): Promise<void> {
    const parts = this.parts(batch.runId, batch.stream);
    await mkdir(parts, { recursive: true });
    await writeFile(join(parts, `${pageName(batch.page)}.ndjson`), ndjson(batch.changes));
  }

  async endStream(_tenant: string, runId: string, stream: string, changedPages: number[]): Promise<void> {
    const parts = this.parts(runId, stream);
    if (this.format === 'parquet') {
      // `{stream}.parquet` from the page files, one page in memory at a time (the writer reads them twice).
      await mkdir(join(this.dir, runId), { recursive: true });
      const pages = async function* () {
        for (const page of changedPages)
          yield* parquet().jsonPages<Change>(
            (await readFile(join(parts, `${pageName(page)}.ndjson`), 'utf8')).split('\n'),
            Number.MAX_SAFE_INTEGER,
          );
      };
      await parquet().writeChangesParquet(pages, join(this.dir, runId, `${stream}.parquet`));
      await rm(parts, { recursive: true, force: true });
      return;
    }
    const text: string[] = [];
    for (const page of changedPages)
      text.push(await readFile(join(parts, `${pageName(page)}.ndjson`), 'utf8'));
    await mkdir(join(this.dir, runId), { recursive: true });
    await writeFile(join(this.dir, runId, `${stream}.ndjson`), text.join(''));
    await rm(parts, { recursive: true, force: true });
  }

  async finish(manifest: RunManifest): Promise<void> {
    await mkdir(join(this.dir, manifest.runId), { recursive: true });
    await writeFile(
      join(this.dir, manifest.runId, 'manifest.json'),
      `${JSON.stringify(manifest, null, 2)}\n`,
    );
  }
}

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
    const body = gzipSync(ndjson(batch.changes));
    await blob.stageBlock(BlobSink.blockId(batch.page), body, body.length, {
      abortSignal: options.abortSignal,
    });
  }

  async endStream(tenant: string, runId: string, stream: string, changedPages: number[]): Promise<void> {
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
          yield* parquet().jsonPages<Change>(parquet().linesOf(text as AsyncIterable<Buffer>));
        };
        await parquet().writeChangesParquet(pages, file);
        const target = await this.blob(tenant, runId, `${stream}.parquet`);
        await target.uploadFile(file, {
          blobHTTPHeaders: { blobContentType: 'application/vnd.apache.parquet' },
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  }

  async finish(manifest: RunManifest): Promise<void> {
    const blob = await this.blob(manifest.tenant, manifest.runId, 'manifest.json');
    const text = `${JSON.stringify(manifest, null, 2)}\n`;
    await blob.upload(text, Buffer.byteLength(text), {
      blobHTTPHeaders: { blobContentType: 'application/json' },
    });
  }
}

export type WebhookSinkOptions = Omit<SignedPostOptions, 'refusedHint' | 'unavailableHint'>;

/**
 * `webhook`: each page's changes POSTed to DOWNSTREAM_WEBHOOK_URL, signed the Standard Webhooks way. The
 * message id is derived from (run, stream, page), so it is the same on every retry and after a resume:
 * receivers de-duplicate on `webhook-id` (and on each change's `changeId`).
 */
export class WebhookSink implements ChangeSink {
  readonly description: string;
  private readonly poster: SignedPoster;

  constructor(url: string, options: WebhookSinkOptions) {
    this.poster = new SignedPoster(url, {
      ...options,
      refusedHint: "check the receiver's secret and URL (DOWNSTREAM_WEBHOOK_URL)",
      unavailableHint: 'the page will be sent again from the checkpoint on the next run',
    });
    this.description = this.poster.description;
  }

  write(batch: ChangeBatch, options: { abortSignal?: AbortSignal } = {}) {
    const { tenant, runId, stream, page, changes } = batch;
    return this.poster.post(
      `${runId}/${stream}/${page}`,
      'sync.changes',
      { tenant, runId, stream, page, changes },
      options,
    );
  }

  endStream(tenant: string, runId: string, stream: string, changedPages: number[], counts: StreamCounts) {
    return this.poster.post(`${runId}/${stream}/end`, 'sync.stream.completed', {
      tenant,
      runId,
      stream,
      pages: changedPages.length,
      counts,
    });
  }

  finish(manifest: RunManifest) {
    return this.poster.post(`${manifest.runId}/manifest`, 'sync.run.completed', manifest);
  }
}

/** Several sinks as one: a page counts as written when every sink has it. */
export class MultiSink implements ChangeSink {
  readonly description: string;
  constructor(readonly sinks: ChangeSink[]) {
    this.description = sinks.map((s) => s.description).join(' + ');
  }
  async write(batch: ChangeBatch, options?: { abortSignal?: AbortSignal }) {
    await Promise.all(this.sinks.map((s) => s.write(batch, options)));
  }
  async endStream(...args: Parameters<ChangeSink['endStream']>) {
    await Promise.all(this.sinks.map((s) => s.endStream(...args)));
  }
  async finish(manifest: RunManifest) {
    await Promise.all(this.sinks.map((s) => s.finish(manifest)));
  }
}

export interface SinkDeps {
  cwd?: string;
  /** SYNC_FORMAT: Parquet files too (blob: beside the NDJSON; dir: instead of it). */
  format?: SyncFormat;
  /** The postgres sink's pool (built on first use) and its options. */
  postgres?: { pool: () => import('pg').Pool; schema: string; softDelete: boolean };
  blobService?: () => BlobServiceClient;
  webhook?: { url?: string; secret: () => Promise<string>; clock?: Clock };
}

/**
 * Parses SYNC_SINKS (or --sink): a comma-separated list of `blob`, `webhook` and `dir:PATH`. Problems name
 * `source`, the setting or flag the spec came from.
 */
export function sinksFor(spec: string, deps: SinkDeps = {}, source = 'SYNC_SINKS'): ChangeSink {
  const problems: string[] = [];
  const sinks: ChangeSink[] = [];
  for (const entry of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (entry.startsWith('dir:') && entry.length > 4)
      sinks.push(new DirectorySink(resolve(deps.cwd ?? process.cwd(), entry.slice(4)), deps.format));
    else if (entry === 'blob' && deps.blobService) sinks.push(new BlobSink(deps.blobService(), deps.format));
    else if (entry === 'webhook' && deps.webhook?.url)
      sinks.push(
        new WebhookSink(deps.webhook.url, { secret: deps.webhook.secret, clock: deps.webhook.clock }),
      );
    else if (entry === 'postgres' && deps.postgres) {
      // Loaded here: only a postgres sink pays for the driver.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { PostgresSink } = require('./postgres') as typeof import('./postgres');
      sinks.push(new PostgresSink(deps.postgres.pool, deps.postgres));
    } else if (entry === 'postgres')
      problems.push(`${source}: the postgres sink needs POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER`);
    else if (entry === 'webhook') problems.push(`${source}: the webhook sink needs DOWNSTREAM_WEBHOOK_URL`);
    else if (entry === 'blob') problems.push(`${source}: the blob sink needs storage (AzureWebJobsStorage)`);
    else
      problems.push(
        `${source}: unknown sink "${entry}"; use blob, webhook, postgres or dir:PATH, comma-separated`,
      );
  }
  if (!sinks.length && !problems.length)
    problems.push(`${source}: no sink given; use blob, webhook, postgres or dir:PATH`);
  if (problems.length) throw new ConfigError(problems);
  return sinks.length === 1 ? sinks[0] : new MultiSink(sinks);
}
