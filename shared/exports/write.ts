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
import { encoderFor, type ExportFormat } from './formats';

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
 * `out`, so memory does not grow with the export's size.
 */
export async function exportStream(
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
  if (options.format === 'parquet') return exportParquet(graphql, stream, out, options);
  const encoder = encoderFor(options.format, options.format === 'csv' ? csvColumns(stream) : []);
  let records = 0;
  let bytes = 0;
  const hash = createHash('sha256');
  async function* text() {
    yield encoder.start();
    for await (const page of prefetch(
      paginate(graphql, stream.document, stream.paths, {
        pageSize: stream.pageSize,
        abortSignal: options.abortSignal,
      }),
    )) {
      records += page.records.length;
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
  if (options.gzip) await pipeline(text, createGzip(), measure, out, { signal: options.abortSignal });
  else await pipeline(text, measure, out, { signal: options.abortSignal });
  return {
    stream: stream.name,
    format: options.format,
    gzip: Boolean(options.gzip),
    records,
    bytes,
    sha256: hash.digest('hex'),
  };
}

/**
 * Parquet needs its columns before its first row group, and a stream's fields and their types are known only
 * after its last page: pages go to a temporary NDJSON file as they arrive, the Parquet file is written from it in
 * two streaming passes (columns, then rows in groups of at most 10 000), then streamed to `out`. Memory stays flat;
 * disk holds the stream twice for as long as the export runs.
 */
async function exportParquet(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  out: Writable,
  options: { abortSignal?: AbortSignal; onPage?: (records: number) => void },
): Promise<ExportFile> {
  const dir = await mkdtemp(join(tmpdir(), 'ti-export-parquet-'));
  try {
    const ndjson = join(dir, `${stream.name}.ndjson`);
    let records = 0;
    async function* lines() {
      for await (const page of prefetch(
        paginate(graphql, stream.document, stream.paths, {
          pageSize: stream.pageSize,
          abortSignal: options.abortSignal,
        }),
      )) {
        records += page.records.length;
        yield page.records.map((r) => `${JSON.stringify(r)}\n`).join('');
        options.onPage?.(records);
      }
    }
    await pipeline(lines, createWriteStream(ndjson), { signal: options.abortSignal });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { linesOf, writeParquet } = require('../sync/parquet') as typeof import('../sync/parquet');
    const pages = async function* () {
      let page: unknown[] = [];
      for await (const line of linesOf(createReadStream(ndjson, { encoding: 'utf8' }))) {
        if (!line) continue;
        page.push(JSON.parse(line));
        if (page.length >= 1000) {
          yield page;
          page = [];
        }
      }
      if (page.length) yield page;
    };
    const file = join(dir, `${stream.name}.parquet`);
    await writeParquet(pages, file, { leading: [], recordOf: (r) => r });
    let bytes = 0;
    const hash = createHash('sha256');
    async function* measure(source: AsyncIterable<Buffer>) {
      for await (const b of source) {
        hash.update(b);
        bytes += b.length;
        yield b;
      }
    }
    await pipeline(createReadStream(file), measure, out, { signal: options.abortSignal });
    return {
      stream: stream.name,
      format: 'parquet',
      gzip: false,
      records,
      bytes,
      sha256: hash.digest('hex'),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
