/*
 * Rows of a current-records table into new data files of about DELTA_ROWS_PER_FILE rows, each uploaded as soon as it
 * is whole while the next fills: what a first load, a run's new rows, a rewrite and a compaction all write with.
 */
import { join } from 'node:path';
import type { AddAction, MetaDataAction } from './actions';
import { DataFileWriter, deltaTypeOf, KEY_COLUMN, type Columns } from './columns';
import type { ColumnKind } from '../../formats/parquet';
import type { DeltaOptions } from './options';
import type { DeltaStore } from './store';

/** About this many rows a data file of the current table (the default of DELTA_ROWS_PER_FILE). */
export const ROWS_PER_FILE = 10_000;

/** A finished data file on local disk, waiting for its upload. */
export interface LocalFile {
  local: string;
  size: number;
  stats: { toJSON(extra?: Record<string, unknown>): string; count: number };
}

/** What the merge needs of the sink: its store and options, and how it uploads a data file and names a schema. */
export interface CurrentContext {
  table: string;
  store: DeltaStore;
  options: DeltaOptions;
  scratch: string;
  fields?: readonly string[];
  put(file: LocalFile, options?: { dataChange?: boolean }): Promise<AddAction>;
  metaData(columns: Columns, configuration: Record<string, string>, id?: string): MetaDataAction;
}

/** The table's columns (key first excluded): as it is made, the stream's fields typed from their values. */
export function columnsFor(
  kinds: ReadonlyMap<string, ColumnKind | undefined>,
  fields?: readonly string[],
): Columns {
  const wanted = fields ?? [...kinds.keys()];
  return wanted
    .filter((f) => f !== KEY_COLUMN)
    .map((f) => [f, deltaTypeOf(kinds.get(f) ?? undefined)] as Columns[number]);
}

/** Rows into files of about `rowsPerFile` rows, each uploaded as soon as it is whole while the next fills. */
export class RollingFiles {
  private writer?: DataFileWriter;
  private pending: Array<Record<string, unknown>> = [];
  private n = 0;
  readonly uploads: Array<Promise<AddAction>> = [];

  constructor(
    private readonly ctx: CurrentContext,
    private readonly columns: Columns,
    private readonly prefix: string,
    private readonly dataChange = true,
  ) {}

  private get rowsPerFile() {
    return this.ctx.options.rowsPerFile ?? ROWS_PER_FILE;
  }

  async add(row: Record<string, unknown>): Promise<void> {
    this.pending.push(row);
    if (this.pending.length >= 1_000) await this.drain();
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      this.writer ??= new DataFileWriter(join(this.ctx.scratch, `${this.prefix}-${this.n++}.parquet`), [
        [KEY_COLUMN, 'string'],
        ...this.columns,
      ]);
      const room = this.rowsPerFile - this.writer.rows;
      const rows = this.pending.length <= room ? this.pending : this.pending.slice(0, room);
      this.pending = rows === this.pending ? [] : this.pending.slice(room);
      await this.writer.add(rows);
      if (this.writer.rows >= this.rowsPerFile) await this.close();
    }
  }

  private async close(): Promise<void> {
    const w = this.writer;
    this.writer = undefined;
    if (!w?.rows) return void (await w?.abandon());
    const file = await w.finish();
    const upload = this.ctx.put(file, { dataChange: this.dataChange });
    upload.catch(() => undefined); // awaited in `finish`; an early failure must not go unhandled meanwhile
    this.uploads.push(upload);
  }

  /** Every file whole and uploaded: their `add`s. */
  async finish(): Promise<AddAction[]> {
    await this.drain();
    await this.close();
    return Promise.all(this.uploads);
  }

  /** Files written and not to be committed: removed (their uploads finished first). */
  async abandon(): Promise<void> {
    await this.writer?.abandon();
    const done = await Promise.allSettled(this.uploads);
    for (const d of done)
      if (d.status === 'fulfilled') await this.ctx.store.remove(`${this.ctx.table}/${d.value.path}`);
  }
}
