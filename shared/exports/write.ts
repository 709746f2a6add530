import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { PassThrough, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate } from '../graphql/pager';
import type { StreamDefinition } from '../streams';
import { prefetch } from '../sync/prefetch';
import { csvColumns } from './columns';
import { encoderFor, type ExportFormat, type TextFormat } from './formats';

/** Loaded on first use: only Parquet exports pay for the writer. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parquetWriter = () => require('../sync/parquet') as typeof import('../sync/parquet');

export interface ExportFile {
  stream: string;
  format: ExportFormat;
  gzip: boolean;
  records: number;
  /** Size and sha256 of the file as stored (compressed when gzip). */
  bytes: number;
  sha256: string;
}

/**
 * One stream to one file, streaming: pages are encoded as they arrive and flow through gzip and a hash into
 * `out`, so memory does not grow with the export's size. Parquet needs its columns before its first row group;
 * they are learnt as the pages arrive and the file is written to a temporary folder meanwhile (rows in groups of at
 * most ROW_GROUP), again at the end only when a late page changed the columns (shared/sync/parquet.ts). The file is
 * then streamed to `out` the same way.
 */
export async function writeExportStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  out: Writable,
  options: {
    format: ExportFormat;
    gzip?: boolean;
    abortSignal?: AbortSignal;
    onPage?: (records: number) => void;
    /**
     * Discards what was written to `out` and answers where to write instead. Given it, a Parquet file goes to `out`
     * while it is written, and starts over only if a page changes the columns; without it, when it is complete.
     */
    restart?: () => Promise<Writable>;
  },
): Promise<ExportFile> {
  const parquet = options.format === 'parquet';
  let records = 0;
  let bytes = 0;
  let hash = createHash('sha256');
  const dir = parquet ? await mkdtemp(join(tmpdir(), 'ti-export-parquet-')) : undefined;
  const file = dir && join(dir, `${stream.name}.parquet`);
  // The file's pieces on their way to `out` as they are written (with `restart`).
  let pieces = file && options.restart ? new PassThrough({ highWaterMark: 1 << 20 }) : undefined;
  const parquetFile = file
    ? new (parquetWriter().ParquetOfRecords)(file, {
        onBytes: (piece) => {
          if (pieces && !pieces.destroyed) pieces.write(piece);
        },
      })
    : undefined;
  // The stream's pages as they arrive, counted, with `onPage` once each has been taken in.
  async function* pages() {
    for await (const page of prefetch(
      paginate(graphql, stream, { pageSize: stream.pageSize, abortSignal: options.abortSignal }),
      // A Parquet row group is written a column per turn (~4 ms in all, shared/sync/parquet.ts): pages go on
      // arriving meanwhile, and with two waiting the next would be asked for only after it.
      parquet ? 6 : 2,
    )) {
      records += page.records.length;
      yield page.records;
      options.onPage?.(records);
    }
  }
  async function* text() {
    const format = options.format as TextFormat;
    const encoder = encoderFor(format, format === 'csv' ? csvColumns(stream) : []);
    yield encoder.start();
    for await (const page of pages()) yield encoder.page(page);
    yield encoder.end();
  }
  async function* measure(source: AsyncIterable<Buffer | string>) {
    for await (const chunk of source) {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (!b.length) continue;
      hash.update(b);
      bytes += b.length;
      yield b;
    }
  }
  try {
    let source: AsyncIterable<Buffer | string> | (() => AsyncGenerator<string>) | undefined = text;
    if (file && parquetFile) {
      // Streamed while it is written, the upload need not wait for the file's end (~0.1 s of a 100 k-record export
      // on local storage, docs/benchmarks.md "Export"); the file stays on disk too, should a page change the columns.
      let streaming = pieces && pipeline(pieces, measure, out, { signal: options.abortSignal });
      streaming?.catch(() => undefined); // awaited at the end; a failed upload aborts the export meanwhile
      for await (const page of pages()) {
        await parquetFile.page(page);
        if (pieces && parquetFile.rewrites && options.restart) {
          // What went out is void: the file is written again at the end and goes to a new `out`.
          out = await options.restart();
          pieces.destroy();
          await streaming?.catch(() => undefined);
          pieces = streaming = undefined;
          hash = createHash('sha256');
          bytes = 0;
        } else if (pieces?.writableNeedDrain) await once(pieces, 'drain', { signal: options.abortSignal });
      }
      await parquetFile.finish();
      pieces?.end();
      await streaming; // streamed: nothing left to send
      source = pieces ? undefined : createReadStream(file);
    }
    // Parquet compresses inside (snappy): never gzipped. (No source: streamed already.)
    if (source && options.gzip && !parquet)
      await pipeline(source, createGzip(), measure, out, { signal: options.abortSignal });
    else if (source) await pipeline(source, measure, out, { signal: options.abortSignal });
  } finally {
    pieces?.destroy(); // ended already, or the export failed: nothing more goes out
    if (dir) await rm(dir, { recursive: true, force: true });
  }
  return {
    stream: stream.name,
    format: options.format,
    gzip: Boolean(options.gzip) && !parquet,
    records,
    bytes,
    sha256: hash.digest('hex'),
  };
}
