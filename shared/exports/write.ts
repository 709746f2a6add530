import { protector, type Hasher } from '../personal/policy';
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
import { recordPath, type StreamDefinition } from '../streams';
import { recordKeys } from '../streams/document';
import { prefetch } from '../graphql/prefetch';
import { csvColumns } from './columns';
import { encoderFor, type TextFormat } from '../formats/text';
import type { ExportFormat } from './file';

/** Loaded on first use: only Parquet exports pay for the writer. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parquetWriter = () => require('../formats/parquet') as typeof import('../formats/parquet');

export interface ExportFile {
  stream: string;
  format: ExportFormat;
  gzip: boolean;
  records: number;
  /** Size and sha256 of the file as stored (compressed when gzip) — of this slice's part, when sliced. */
  bytes: number;
  sha256: string;
  /**
   * Where the next slice starts, when this one stopped at its deadline with pages left (text formats only): the
   * pager's cursor, and whether a record was written so far (JSON's commas).
   */
  stoppedAt?: { cursor: string | null; written: boolean; pageSize?: number };
}

/**
 * One stream to one file, streaming: pages are encoded as they arrive and flow through gzip and a hash into
 * `out`, so memory does not grow with the export's size. Parquet needs its columns before its first row group;
 * they are learnt as the pages arrive and the file is written to a temporary folder meanwhile (rows in groups of at
 * most ROW_GROUP), again at the end only when a late page changed the columns (shared/formats/parquet/). The file is
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
    /** A slice after the first: the pager's cursor and whether records were written before (not for Parquet). */
    continueFrom?: { cursor: string | null; written: boolean; pageSize?: number };
    /**
     * Text formats stop after the page during which `clock` passed this (ACTIVITY_SLICE_SECONDS), the file left
     * open for the next slice (`stoppedAt`). Parquet, whose footer describes the whole file, is written in one go.
     */
    deadlineMs?: number;
    clock?: { now(): number };
    /** Told as soon as the slice stops early (before `out` ends): the upload then stages without committing. */
    onStop?: () => void;
    /** The key a stream's personal fields are hashed with (shared/personal/): required when it hashes one. */
    hasher?: Hasher;
  },
): Promise<ExportFile> {
  // Personal fields as the stream's policy says, on each page before the encoder sees it.
  const protect = protector(stream, options.hasher);
  const parquet = options.format === 'parquet';
  if (parquet && options.continueFrom) throw new Error('a Parquet export is written in one slice');
  const clock = options.clock ?? { now: () => Date.now() };
  let stoppedAt: ExportFile['stoppedAt'];
  let encoder: ReturnType<typeof encoderFor> | undefined;
  let records = 0;
  let bytes = 0;
  let hash = createHash('sha256');
  const dir = parquet ? await mkdtemp(join(tmpdir(), 'ti-export-parquet-')) : undefined;
  const file = dir && join(dir, `${stream.name}.parquet`);
  // The file's pieces on their way to `out` as they are written (with `restart`).
  let pieces = file && options.restart ? new PassThrough({ highWaterMark: 1 << 20 }) : undefined;
  const parquetFile = file
    ? new (parquetWriter().ParquetOfRecords)(file, {
        // The columns are the stream's selection: a key the tenant sends beyond it is not one.
        fields: recordKeys(stream.document, recordPath(stream))?.filter(
          (f) => stream.personal?.[f] !== 'drop',
        ),
        onBytes: (piece) => {
          if (pieces && !pieces.destroyed) pieces.write(piece);
        },
      })
    : undefined;
  // The stream's pages as they arrive, counted, with `onPage` once each has been taken in.
  async function* pages() {
    for await (const page of prefetch(
      paginate(graphql, stream, {
        // A size the tenant refused before goes on lowered: numbered pages count pages of it.
        pageSize: options.continueFrom?.pageSize ?? stream.pageSize,
        startCursor: options.continueFrom?.cursor ?? null,
        abortSignal: options.abortSignal,
      }),
      // A Parquet row group is written a column per turn (shared/formats/parquet/hyparquet-adapter.ts): pages go on
      // arriving meanwhile, and with two waiting the next would be asked for only after it.
      parquet ? 6 : 2,
    )) {
      records += page.records.length;
      yield protect ? protect(page.records) : page.records;
      options.onPage?.(records);
      // The page is written: past the slice's deadline, the rest goes to the next slice, from this page's cursor.
      // A page fetched ahead meanwhile is dropped and read again there (nothing of it was written).
      if (
        !parquet &&
        page.hasNextPage &&
        options.deadlineMs !== undefined &&
        clock.now() >= options.deadlineMs
      ) {
        stoppedAt = {
          cursor: page.endCursor,
          written: encoder?.written() ?? false,
          ...(page.pageSize < stream.pageSize ? { pageSize: page.pageSize } : {}),
        };
        options.onStop?.();
        return;
      }
    }
  }
  async function* text() {
    const format = options.format as TextFormat;
    encoder = encoderFor(format, format === 'csv' ? csvColumns(stream) : [], {
      continuing: options.continueFrom && { written: options.continueFrom.written },
    });
    yield encoder.start();
    for await (const page of pages()) yield encoder.page(page);
    // A slice that stopped leaves the file open: its end is written by the last slice.
    if (!stoppedAt) yield encoder.end();
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
    ...(stoppedAt ? { stoppedAt } : {}),
  };
}
