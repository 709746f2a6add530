import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
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
  },
): Promise<ExportFile> {
  const parquet = options.format === 'parquet';
  let records = 0;
  let bytes = 0;
  const hash = createHash('sha256');
  const dir = parquet ? await mkdtemp(join(tmpdir(), 'ti-export-parquet-')) : undefined;
  const file = dir && join(dir, `${stream.name}.parquet`);
  const parquetFile = file ? new (parquetWriter().ParquetOfRecords)(file) : undefined;
  // The stream's pages as they arrive, counted, with `onPage` once each has been taken in.
  async function* pages() {
    for await (const page of prefetch(
      paginate(graphql, stream, { pageSize: stream.pageSize, abortSignal: options.abortSignal }),
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
    let source: AsyncIterable<Buffer | string> | (() => AsyncGenerator<string>) = text;
    if (file && parquetFile) {
      for await (const page of pages()) await parquetFile.page(page);
      await parquetFile.finish();
      source = createReadStream(file);
    }
    // Parquet compresses inside (snappy): never gzipped.
    if (options.gzip && !parquet)
      await pipeline(source, createGzip(), measure, out, { signal: options.abortSignal });
    else await pipeline(source, measure, out, { signal: options.abortSignal });
  } finally {
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
