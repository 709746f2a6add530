import { createHash } from 'node:crypto';
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
