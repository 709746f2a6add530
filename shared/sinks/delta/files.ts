/*
 * Reading a table's data files — this sink's, or another engine's (an OPTIMIZE may have compacted a table into one
 * file of millions of rows): ranges fetched as hyparquet asks for them (the footer, then the column chunks it needs),
 * the rows a deletion vector removed skipped, and what a run holds in memory bounded by a batch of rows, whatever the
 * file's size (docs/benchmarks.md, "Delta").
 */
import type { AsyncBuffer } from 'hyparquet';
import { IntegrationError } from '../../errors';
import type { AddAction } from './actions';
import { KEY_COLUMN } from './columns';
import { rowsOf } from './deletion-vectors';
import type { DeltaStore } from './store';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const hyparquet = () => require('hyparquet') as typeof import('hyparquet');
/** ZSTD, GZIP, Brotli, LZ4: what other engines write with (delta-rs writes ZSTD); hyparquet itself reads Snappy. */
const compressors = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('hyparquet-compressors') as typeof import('hyparquet-compressors')).compressors;

/** Rows read at a time when a whole file is read (a rewrite): the peak a run adds, not the file's size. */
export const ROW_BATCH = 10_000;

/** A data file of `table` as hyparquet reads it: byte ranges from the store, as asked. */
export function fileBuffer(store: DeltaStore, table: string, add: AddAction): AsyncBuffer {
  const path = `${table}/${add.path}`;
  return {
    byteLength: add.size,
    slice: async (start: number, end = add.size) => {
      const bytes = await store.readRange(path, start, end);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

const missing = (store: DeltaStore, table: string, add: AddAction, err: unknown) =>
  new IntegrationError(
    'sink_failed',
    `Delta table ${table}: its log names ${add.path}, which cannot be read in ${store.description} (${err instanceof Error ? err.message : String(err)}); start the stream over with \`tenant-integrations sync --full\` into an empty location`,
  );

async function metadataOf(store: DeltaStore, table: string, add: AddAction, file: AsyncBuffer) {
  try {
    return await hyparquet().parquetMetadataAsync(file);
  } catch (err) {
    throw missing(store, table, add, err);
  }
}

/** The rows of the file its deletion vector removes (none without one). */
export async function deletedRows(store: DeltaStore, table: string, add: AddAction): Promise<Set<number>> {
  if (!add.deletionVector) return new Set();
  return rowsOf(add.deletionVector, (path, start, end) => store.readRange(`${table}/${path}`, start, end));
}

/** The file's rows as its `stats` count them (physical rows, deleted ones included), or undefined. */
export function physicalRows(add: AddAction): number | undefined {
  try {
    const n = (JSON.parse(add.stats ?? '{}') as { numRecords?: unknown }).numRecords;
    return typeof n === 'number' ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Keys looked up through the file's statistics and page index at most: more are found by reading the key column. */
const LOOKUP_KEYS = 256;

/**
 * The live rows of the file whose key is one of `keys` (sorted), with their row index. A few keys are looked up as a
 * filter: the file's row groups and pages whose key range cannot hold one are not read (a file another engine compacted
 * to millions of rows costs its dictionary and a page or two). More are found by reading the key column, ROW_BATCH rows
 * at a time (the pages holding them, where the file has an offset index). `deleted`: rows its deletion vector removed.
 */
export async function findKeys(
  store: DeltaStore,
  table: string,
  add: AddAction,
  keys: readonly string[],
  deleted: ReadonlySet<number>,
  /** The column keys are in: the current table's `_key`, the changes table's `key`. */
  column = KEY_COLUMN,
): Promise<Array<[row: number, key: string]>> {
  const file = fileBuffer(store, table, add);
  const metadata = await metadataOf(store, table, add, file);
  const { parquetReadObjects, rowIndex } = hyparquet();
  const found: Array<[number, string]> = [];
  if (keys.length <= LOOKUP_KEYS) {
    const rows = await parquetReadObjects({
      file,
      metadata,
      columns: [column],
      filter: { [column]: { $in: [...keys] } },
      usePageIndex: true,
      includeRowIndex: true,
      rowFormat: 'object',
      compressors: compressors(),
    });
    for (const r of rows) {
      const row = (r as unknown as Record<symbol, number>)[rowIndex as symbol];
      if (!deleted.has(row)) found.push([row, String(r[column])]);
    }
    return found;
  }
  const wanted = new Set(keys);
  const total = Number(metadata.num_rows);
  for (let start = 0; start < total; start += ROW_BATCH) {
    const rows = await parquetReadObjects({
      file,
      metadata,
      columns: [column],
      rowStart: start,
      rowEnd: Math.min(total, start + ROW_BATCH),
      useOffsetIndex: true,
      compressors: compressors(),
    });
    rows.forEach((r, i) => {
      const key = String(r[column]);
      if (wanted.has(key) && !deleted.has(start + i)) found.push([start + i, key]);
    });
  }
  return found;
}

/**
 * The file's live rows (every column by name), ROW_BATCH at a time: its rows laid out again (a rewrite) without the
 * file ever in memory. `skip`: rows not wanted (deleted, or replaced by the run).
 */
export async function* rowBatches(
  store: DeltaStore,
  table: string,
  add: AddAction,
  skip: ReadonlySet<number>,
): AsyncIterable<Array<Record<string, unknown>>> {
  const file = fileBuffer(store, table, add);
  const metadata = await metadataOf(store, table, add, file);
  const total = Number(metadata.num_rows);
  for (let start = 0; start < total; start += ROW_BATCH) {
    const rows = (await hyparquet().parquetReadObjects({
      file,
      metadata,
      rowStart: start,
      rowEnd: Math.min(total, start + ROW_BATCH),
      compressors: compressors(),
      useOffsetIndex: true,
    })) as Array<Record<string, unknown>>;
    const live = skip.size ? rows.filter((_, i) => !skip.has(start + i)) : rows;
    if (live.length) yield live;
  }
}
