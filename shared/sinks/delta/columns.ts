/*
 * A Delta table's columns: the Delta schema (schemaString) the log holds, the Parquet data files that follow it, a
 * record made a row of it, and the statistics each `add` carries.
 *
 * Nested objects and lists are JSON text in a string column, as the sinks' other Parquet files have them: a field
 * added deep inside an object would otherwise be a struct's schema change, which Delta readers take unevenly
 * (Fabric's SQL endpoint and Direct Lake among them); Spark, Fabric and DuckDB read the text with from_json /
 * JSON_VALUE / json_extract.
 */
import { rm, stat } from 'node:fs/promises';
import type { ColumnKind } from '../../formats/parquet';

/** A column of a table this sink writes: Delta's `string`, `double` or `boolean`, always nullable. */
export type DeltaType = 'string' | 'double' | 'boolean';
export type Columns = Array<[name: string, type: DeltaType]>;

/** The current table's key column: the change's id (a composite key's JSON array), what a merge is keyed on. */
export const KEY_COLUMN = '_key';

export const deltaTypeOf = (kind: ColumnKind | undefined): DeltaType =>
  kind === 'DOUBLE' ? 'double' : kind === 'BOOLEAN' ? 'boolean' : 'string';

export const schemaString = (columns: Columns) =>
  JSON.stringify({
    type: 'struct',
    fields: columns.map(([name, type]) => ({ name, type, nullable: true, metadata: {} })),
  });

/** The columns a table's schema names; a type this sink does not write (a table made elsewhere) is refused. */
export function columnsOf(schema: string): Columns {
  const parsed = JSON.parse(schema) as { fields: Array<{ name: string; type: unknown }> };
  return parsed.fields.map((f) => {
    if (f.type !== 'string' && f.type !== 'double' && f.type !== 'boolean')
      throw new Error(`column ${f.name} has type ${JSON.stringify(f.type)}, which this sink does not write`);
    return [f.name, f.type];
  });
}

/** A value as its column holds it, or `undefined` when it cannot (a text in a `double` column). */
export function cellOf(value: unknown, type: DeltaType): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'string') {
    if (typeof value === 'string') return value;
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
  if (type === 'double') return typeof value === 'number' ? value : undefined;
  return typeof value === 'boolean' ? value : undefined;
}

/** A record as a row of `columns` (its key first), or the first field that does not fit. */
export function rowOf(
  key: string,
  record: unknown,
  columns: Columns,
): { row: Record<string, unknown> } | { misfit: string } {
  const row: Record<string, unknown> = { [KEY_COLUMN]: key };
  const r = (record && typeof record === 'object' ? record : {}) as Record<string, unknown>;
  for (const [name, type] of columns) {
    if (name === KEY_COLUMN) continue;
    const cell = cellOf(r[name], type);
    if (cell === undefined)
      return { misfit: `field ${name} is ${typeof r[name]} where the table’s column is ${type}` };
    row[name] = cell;
  }
  return { row };
}

const ASCII = /^[\x20-\x7e]*$/;

/**
 * A data file's statistics, as its `add` action carries them (data skipping): rows, nulls, and the least and
 * greatest value of numeric columns and of text columns whose values are all short printable ASCII — where every
 * reader orders texts as JavaScript does (UTF-8 byte order differs from UTF-16's above U+FFFF) and nothing is cut.
 */
export class Stats {
  private rows = 0;
  private readonly columns: Array<{
    name: string;
    nulls: number;
    orderable: boolean;
    least?: string | number;
    greatest?: string | number;
  }>;

  constructor(columns: Columns) {
    this.columns = columns.map(([name, type]) => ({ name, nulls: 0, orderable: type !== 'boolean' }));
  }

  add(row: Record<string, unknown>): void {
    this.rows++;
    for (const c of this.columns) {
      const v = row[c.name];
      if (v === null || v === undefined) {
        c.nulls++;
        continue;
      }
      if (!c.orderable) continue;
      if (
        typeof v === 'number' ? !Number.isFinite(v) : typeof v !== 'string' || v.length > 64 || !ASCII.test(v)
      ) {
        c.orderable = false;
        continue;
      }
      const x = v as string | number;
      if (c.least === undefined || x < c.least) c.least = x;
      if (c.greatest === undefined || x > c.greatest) c.greatest = x;
    }
  }

  toJSON(extra: Record<string, unknown> = {}): string {
    const minValues: Record<string, unknown> = {};
    const maxValues: Record<string, unknown> = {};
    const nullCount: Record<string, number> = {};
    for (const c of this.columns) {
      nullCount[c.name] = c.nulls;
      if (c.orderable && c.least !== undefined) {
        minValues[c.name] = c.least;
        maxValues[c.name] = c.greatest;
      }
    }
    return JSON.stringify({ numRecords: this.rows, minValues, maxValues, nullCount, ...extra });
  }

  get count(): number {
    return this.rows;
  }
}

const parquet = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('../../formats/parquet') as typeof import('../../formats/parquet');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const hyparquet = () => require('hyparquet') as typeof import('hyparquet');
/** ZSTD, GZIP, Brotli, LZ4: what other engines write with (delta-rs writes ZSTD); hyparquet itself reads Snappy. */
const compressors = () =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('hyparquet-compressors') as typeof import('hyparquet-compressors')).compressors;

const KINDS: Record<DeltaType, ColumnKind> = { string: 'STRING', double: 'DOUBLE', boolean: 'BOOLEAN' };

/**
 * Rows into one Parquet data file at `local` as they come (the sinks' writer, a row group at a time), with the
 * statistics its `add` carries: uploaded from there when finished (a million changes are not held in memory).
 */
export class DataFileWriter {
  readonly stats: Stats;
  private readonly writer: import('../../formats/parquet').ParquetRows<Record<string, unknown>>;

  constructor(
    readonly local: string,
    columns: Columns,
    required: readonly string[] = [KEY_COLUMN],
  ) {
    const { ParquetRows } = parquet();
    this.stats = new Stats(columns);
    // Every column is "leading" (a value taken by name): the writer's own walk of a record's fields would skip none.
    this.writer = new ParquetRows<Record<string, unknown>>(local, new Map(), {
      leading: columns.map(([name, type]) => ({
        name,
        kind: KINDS[type],
        required: required.includes(name),
        value: (r: Record<string, unknown>) => r[name],
      })),
      recordOf: () => undefined,
    });
  }

  get rows(): number {
    return this.stats.count;
  }

  async add(rows: Array<Record<string, unknown>>): Promise<void> {
    for (const r of rows) this.stats.add(r);
    await this.writer.add(rows);
  }

  async finish(): Promise<{ local: string; size: number; stats: Stats }> {
    try {
      await this.writer.finish();
      return { local: this.local, size: (await stat(this.local)).size, stats: this.stats };
    } catch (err) {
      await this.abandon();
      throw err;
    }
  }

  async abandon(): Promise<void> {
    await rm(this.local, { force: true });
  }
}

/** Rows as one Parquet data file at `local`, its size and statistics. `columns` are the file's columns in order. */
export async function dataFile(
  pages: AsyncIterable<Array<Record<string, unknown>>> | Array<Array<Record<string, unknown>>>,
  columns: Columns,
  local: string,
  required: readonly string[] = [KEY_COLUMN],
): Promise<{ local: string; size: number; stats: Stats }> {
  const writer = new DataFileWriter(local, columns, required);
  try {
    for await (const rows of pages) await writer.add(rows);
  } catch (err) {
    await writer.abandon();
    throw err;
  }
  return writer.finish();
}

/** A data file's rows, every column by name (a column the file lacks is absent). */
export async function readDataFile(bytes: Buffer): Promise<Array<Record<string, unknown>>> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return (await hyparquet().parquetReadObjects({ file, compressors: compressors() })) as Array<
    Record<string, unknown>
  >;
}
