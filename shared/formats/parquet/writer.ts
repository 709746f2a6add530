import { rename, rm } from 'node:fs/promises';
import { element, learnColumns, type ColumnKind, type LeadingColumn, type SchemaElement } from './columns';
import {
  fileWriter,
  finishWithEntries,
  rowGroupEntry,
  writeRowGroup,
  type TextStatistics,
  type RowsWriter,
} from './hyparquet-adapter';
import { cell, encodeTexts, isText, MIN_DISTINCT_SAMPLE, type Gathering } from './row-groups';
import { snappyCompress } from './snappy';

/**
 * Rows as one Parquet file (hyparquet-writer, snappy): leading columns given by the caller (a change's id and kind),
 * then one column per top-level field of the records. A field whose values are all numbers is DOUBLE, all booleans
 * BOOLEAN, all strings STRING; objects, lists and mixed values are JSON text (Parquet's JSON type). At most ROW_GROUP
 * rows are in memory at a time, so memory stays flat.
 */
// The groups' column buffers, not the rows, set a writer's peak memory: small groups keep it flat
// (docs/benchmarks.md, "Parquet").
export const ROW_GROUP = 2_000;

/**
 * Rows into one Parquet file as they come, in row groups of ROW_GROUP, with columns known before the first row:
 * the leading ones, then one per entry of `columns` (a field of `recordOf(item)`). `finish` writes the footer.
 *
 * Each row's values go to their columns as the row is added, and the group is written when full, a column per turn
 * (`writeRowGroup`). Each column's write holds the thread — a page's answer arriving meanwhile waits for it
 * (docs/benchmarks.md, "Export") — so what can be done a page at a time, while the next page is on its way, is not left to it: texts are encoded and their
 * least and greatest values kept as they come (`encodeTexts`).
 */
export class ParquetRows<T> {
  rows = 0;
  private readonly writer: RowsWriter;
  private readonly json: SchemaElement[];
  /** Each column's schema element as the footer holds it (JSON columns annotated), by name. */
  private readonly footerElements: Map<string, import('hyparquet').SchemaElement>;
  /** Each written row group's entry of the footer, serialized (hyparquet-adapter.ts). */
  private readonly entries: Array<Uint8Array | undefined> = [];
  /** Text columns whose values were all distinct in a group: encoded without a dictionary from then on. */
  private readonly distinct = new Set<string>();
  private readonly names: string[];
  private readonly position: Map<string, number>;
  private group: Gathering[];
  private size = 0;

  constructor(
    path: string,
    readonly columns: Map<string, ColumnKind>,
    private readonly options: {
      leading: LeadingColumn<T>[];
      recordOf: (item: T) => unknown;
      /** Each piece of the file as it is written, in order (a copy the caller keeps). */
      onBytes?: (bytes: Uint8Array) => void;
    },
  ) {
    // Loaded on first use (an ES module; Node 22 requires it synchronously): only Parquet output pays for it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { ParquetWriter, ByteWriter } = require('hyparquet-writer') as typeof import('hyparquet-writer');
    const { leading } = options;
    const schema: SchemaElement[] = [
      { name: 'root', num_children: leading.length + columns.size },
      ...leading.map((c) => element(c.name, c.kind, c.required)),
      ...[...columns].map(([name, kind]) => element(name, kind)),
    ];
    // JSON columns are written as the bytes of their JSON text, and are annotated JSON only for the footer (`finish`):
    // with the annotation the writer would serialise each value again. Their statistics are those bytes either way.
    this.json = schema.filter((e) => e.converted_type === 'JSON');
    this.footerElements = new Map(schema.map((e) => [e.name, { ...e }]));
    for (const e of this.json) delete e.converted_type;
    this.writer = new ParquetWriter({
      writer: fileWriter(new ByteWriter(), path, options.onBytes),
      schema: schema as never,
      codec: 'SNAPPY',
      compressors: { SNAPPY: snappyCompress },
    });
    this.names = [...columns.keys()];
    this.position = new Map(this.names.map((name, j) => [name, j]));
    this.group = this.gathering();
  }

  private gathering(): Gathering[] {
    return [...this.options.leading.map((c) => [c.name, c.kind] as const), ...this.columns].map(
      ([name, kind]) => ({
        name,
        kind,
        values: new Array<unknown>(ROW_GROUP).fill(null),
        shared: isText(kind) && !this.distinct.has(name) ? new Map<string, Buffer>() : undefined,
        texts: 0,
        nulls: 0,
      }),
    );
  }

  async add(items: Iterable<T>): Promise<void> {
    const { leading, recordOf } = this.options;
    const { names, position } = this;
    const first = leading.length;
    let from = this.size;
    let values = this.group.map((c) => c.values);
    for (const item of items) {
      const row = this.size++;
      for (let j = 0; j < first; j++) values[j][row] = cell(leading[j].value(item));
      const r = recordOf(item);
      if (r && typeof r === 'object' && !Array.isArray(r)) {
        // The record's own fields are walked, not looked up by name: records of one query have their fields in one
        // order, the columns' (learnt from them), and a for-in reads a field by the record's layout where `r[name]`
        // per column searched for it. A field out of that order is found by its name; one not a column is skipped.
        let next = 0;
        for (const name in r) {
          const j = names[next] === name ? next : position.get(name);
          if (j === undefined) continue;
          values[first + j][row] = cell((r as Record<string, unknown>)[name]);
          next = j + 1;
        }
      }
      if (this.size >= ROW_GROUP) {
        for (const column of this.group) encodeTexts(column, from, this.size);
        await this.flush();
        from = 0;
        values = this.group.map((c) => c.values);
      }
    }
    for (const column of this.group) encodeTexts(column, from, this.size);
  }

  async finish(): Promise<number> {
    await this.flush();
    // The writer keeps the schema it was given and writes the footer from it.
    for (const e of this.json) e.converted_type = 'JSON';
    const w = this.writer;
    const entries = this.entries;
    if (this.rows && entries.length === w.row_groups.length && entries.every((e) => e !== undefined))
      finishWithEntries(w, entries, (group) => this.entryOf(group));
    else w.finish(); // the writer's own footer
    return this.rows;
  }

  private entryOf(group: RowsWriter['row_groups'][number]): Uint8Array | undefined {
    return rowGroupEntry(
      group,
      (name) => this.footerElements.get(name),
      this.writer.statisticsTruncateLength,
    );
  }

  private async flush(): Promise<void> {
    const { group, size } = this;
    if (!size) return;
    const columnData = group.map(({ name, kind, values, shared, texts, nulls, least, greatest }) => {
      if (size < values.length) values.length = size;
      if (!isText(kind)) return { name, data: values };
      // The writer keeps each column's least and greatest value for the footer. Text and JSON values are views into
      // Buffer's shared 8 KiB slabs, and each kept one would hold its whole slab to the end of the file: copied, they
      // hold their own bytes only.
      const statistics: TextStatistics = {
        min_value: least && new Uint8Array(least[1]),
        max_value: greatest && new Uint8Array(greatest[1]),
        null_count: BigInt(nulls),
      };
      // A column whose texts were all distinct in a whole group is not worth a dictionary: the writer would sample and
      // hash its values to find that out again in every group (docs/benchmarks.md, "Export").
      if (!shared) return { name, data: values, encoding: 'PLAIN' as const, statistics };
      if (texts >= MIN_DISTINCT_SAMPLE && shared.size === texts) this.distinct.add(name);
      return { name, data: values, statistics };
    });
    await writeRowGroup(this.writer, columnData, size);
    // Its entry of the footer, in a turn of its own: made now rather than at the end of the file (hyparquet-adapter.ts).
    await new Promise<void>((r) => setImmediate(r));
    this.entries.push(this.entryOf(this.writer.row_groups[this.writer.row_groups.length - 1]));
    this.rows += size;
    this.size = 0;
    this.group = this.gathering();
  }
}

/**
 * Writes the items to `file` (via `file.tmp`, renamed when complete, so a reader never sees half a file): the
 * leading columns, then one per top-level field of `recordOf(item)`. Without `columns` (learnt already, as the
 * items arrived), `pages` is called twice and must yield the same items both times. Answers the number of rows.
 */
export async function writeParquet<T>(
  pages: () => AsyncIterable<T[]>,
  file: string,
  options: {
    leading: LeadingColumn<T>[];
    recordOf: (item: T) => unknown;
    columns?: Map<string, ColumnKind>;
    /** The record keys the stream selects: the only columns a record's fields may have. */
    fields?: readonly string[];
  },
): Promise<number> {
  const { leading, recordOf } = options;
  const columns =
    options.columns ??
    (await learnColumns(
      pages,
      recordOf,
      leading.map((c) => c.name),
      options.fields,
    ));
  const tmp = `${file}.tmp`;
  try {
    const rows = new ParquetRows(tmp, columns, { leading, recordOf });
    for await (const items of pages()) await rows.add(items);
    await rows.finish();
    await rename(tmp, file);
    return rows.rows;
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
