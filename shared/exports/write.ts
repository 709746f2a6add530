import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
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
 * `out`, so memory does not grow with the export's size. Parquet needs its columns before its first row group,
 * and a stream's fields and their types are known only after its last page: its pages go to a temporary NDJSON
 * file as they arrive and, while the columns learnt from the first page hold, into the Parquet file as well (rows in
 * groups of at most ROW_GROUP); a page that changes the columns has the file written again from the NDJSON. The
 * file is then streamed to `out` the same way. Disk holds the stream twice while that runs.
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
  const format: TextFormat = options.format === 'parquet' ? 'ndjson' : options.format;
  const encoder = encoderFor(format, format === 'csv' ? csvColumns(stream) : []);
  let records = 0;
  let bytes = 0;
  const hash = createHash('sha256');
  const dir = parquet ? await mkdtemp(join(tmpdir(), 'ti-export-parquet-')) : undefined;
  const file = dir && join(dir, `${stream.name}.parquet`);
  // Parquet is written as the pages arrive while their columns hold (shared/sync/parquet.ts).
  const parquetFile = file ? new (parquetWriter().ParquetOfRecords)(file) : undefined;
  async function* text() {
    yield encoder.start();
    for await (const page of prefetch(
      paginate(graphql, stream, {
        pageSize: stream.pageSize,
        abortSignal: options.abortSignal,
      }),
    )) {
      records += page.records.length;
      parquetFile?.page(page.records);
      yield encoder.page(page.records);
      options.onPage?.(records);
    }
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
    if (dir && file && parquetFile) {
      // The pages also go to a temporary NDJSON file: read back only when a late page changed the columns.
      const ndjson = join(dir, `${stream.name}.ndjson`);
      await pipeline(text, createWriteStream(ndjson), { signal: options.abortSignal });
      const { jsonPages, linesOf } = parquetWriter();
      await parquetFile.finish(() =>
        jsonPages<unknown>(linesOf(createReadStream(ndjson, { encoding: 'utf8' }))),
      );
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
