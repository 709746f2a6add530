import { createReadStream } from 'node:fs';
import { appendFile, rename, rm } from 'node:fs/promises';
import { jsonPages, linesOf } from '../lines';
import { ColumnLearner, sameColumns, type ColumnKind, type LeadingColumn } from './columns';
import { ParquetRows, writeParquet } from './writer';

/**
 * A Parquet file of records (an export's), written while the pages arrive — as long as the columns learnt so far
 * hold. A page that adds a field or changes a field's type ends that file where it is (its rows are kept) and it and
 * every later page go to a temporary NDJSON file; `finish` then writes the file once more with the columns of all
 * pages: the first file's rows read back (each column holds one type, so a value reads back as it was), then the
 * NDJSON's. With records of one shape — most collections — the file is done when the last page is, and no page is
 * ever serialised a second time.
 */
/** An export's rows are its records, with no leading columns. */
const RECORDS: { leading: LeadingColumn<unknown>[]; recordOf: (r: unknown) => unknown } = {
  leading: [],
  recordOf: (r) => r,
};

export class ParquetOfRecords {
  private readonly learner: ColumnLearner;
  private early?: ParquetRows<unknown>;
  /** Whether a page changed the columns: it and the later ones are in the NDJSON file. */
  private late = false;

  constructor(
    private readonly file: string,
    /** Each piece of the file as it is written, while the columns hold (`rewrites` false). */
    private readonly options: {
      onBytes?: (bytes: Uint8Array) => void;
      /** The record keys the stream selects: the only columns there may be. */
      fields?: readonly string[];
    } = {},
  ) {
    this.learner = new ColumnLearner([], options.fields);
  }

  /** Whether a page changed the columns, so that `finish` writes the file again: pieces given so far are void. */
  get rewrites(): boolean {
    return this.late;
  }

  /** The file of the pages whose columns hold, its pieces handed on as they are written. */
  private rows(columns: Map<string, ColumnKind>) {
    return new ParquetRows(this.earlyPath, columns, { ...RECORDS, onBytes: this.options.onBytes });
  }

  private get earlyPath() {
    return `${this.file}.early`;
  }

  private get latePath() {
    return `${this.file}.late.ndjson`;
  }

  async page(records: unknown[]): Promise<void> {
    for (const r of records) this.learner.add(r);
    if (!records.length) return;
    if (!this.late) {
      const columns = this.learner.columns();
      this.early ??= this.rows(columns);
      if (sameColumns(this.early.columns, columns)) return this.early.add(records);
      await this.early.finish(); // readable from here on: its rows are read back by `finish`
      this.late = true;
    }
    let text = '';
    for (const r of records) text += `${JSON.stringify(r)}\n`;
    await appendFile(this.latePath, text);
  }

  /** Writes the file; answers its number of rows. */
  async finish(): Promise<number> {
    const columns = this.learner.columns();
    try {
      if (!this.late) {
        const early = this.early ?? this.rows(columns);
        const rows = await early.finish();
        await rename(this.earlyPath, this.file);
        return rows;
      }
      const { earlyPath, latePath } = this;
      return await writeParquet(
        async function* () {
          yield* parquetPages(earlyPath);
          yield* jsonPages<unknown>(linesOf(createReadStream(latePath, { encoding: 'utf8' })));
        },
        this.file,
        { ...RECORDS, columns },
      );
    } finally {
      await Promise.all([rm(this.earlyPath, { force: true }), rm(this.latePath, { force: true })]);
    }
  }
}

/** A Parquet file's rows as records (an empty cell as null), a row group at a time. */
async function* parquetPages(path: string): AsyncGenerator<unknown[]> {
  // Loaded on first use, like the writer (an ES module; its Node entry point reads files).
  const { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } =
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('hyparquet') as typeof import('hyparquet') & {
      asyncBufferFromFile(path: string): Promise<import('hyparquet').AsyncBuffer>;
    };
  const file = await asyncBufferFromFile(path);
  const metadata = await parquetMetadataAsync(file);
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    yield await parquetReadObjects({ file, metadata, rowStart, rowEnd });
    rowStart = rowEnd;
  }
}
