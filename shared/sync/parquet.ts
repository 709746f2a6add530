import { appendFileSync, createReadStream, writeFileSync } from 'node:fs';
import { appendFile, rename, rm } from 'node:fs/promises';
import { rejectedError, sortOut, type RejectedPolicy } from '../sinks/rejected';
import { StringDecoder } from 'node:string_decoder';
import type { Change } from './changes';
import { finishWithEntries, rowGroupEntry } from './parquet-footer';
import { snappyCompress } from './snappy';

/**
 * Changes as one Parquet file (hyparquet-writer, snappy): the columns `change_id`, `kind`, `id` and
 * `content_hash` (the change id of a create or update; empty for a deletion), then one column per top-level field
 * of the records. A field whose values are all numbers is DOUBLE, all booleans BOOLEAN, all strings STRING; objects,
 * lists and mixed values are JSON text (Parquet's JSON type). Two passes over the pages — one to learn the columns
 * and their types, one to write — with at most ROW_GROUP changes in memory at a time, so memory stays flat.
 */
// Measured on records like the sandbox's (~300 B): a writer's peak RSS at 10 k / 100 k / 300 k rows was 108 / 154 MB
// (100 k) with groups of 5 000, 109 / 112 MB with 2 000 — the groups' column buffers, not the rows, set the peak.
export const ROW_GROUP = 2_000;

export type Kind = 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'JSON';

interface SchemaElement {
  name: string;
  type?: 'BYTE_ARRAY' | 'DOUBLE' | 'BOOLEAN';
  converted_type?: 'UTF8' | 'JSON';
  repetition_type?: 'REQUIRED' | 'OPTIONAL';
  num_children?: number;
}

function kindOf(v: unknown): Kind | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'number') return 'DOUBLE';
  if (typeof v === 'boolean') return 'BOOLEAN';
  if (typeof v === 'string') return 'STRING';
  return 'JSON';
}

/**
 * The lines of a text stream, read as the consumer asks for them. Buffers are decoded as UTF-8 across chunk
 * boundaries (a character split between two chunks stays whole).
 */
export async function* linesOf(chunks: AsyncIterable<string | Buffer>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of chunks) {
    const parts = (rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk))).split('\n');
    rest = parts.pop() ?? '';
    yield* parts;
  }
  rest += decoder.end();
  if (rest) yield rest;
}

/** NDJSON lines as pages of parsed values, at most `size` per page (empty lines skipped). */
export async function* jsonPages<T>(
  lines: AsyncIterable<string> | Iterable<string>,
  size = 1000,
): AsyncGenerator<T[]> {
  let page: T[] = [];
  for await (const line of lines) {
    if (!line) continue;
    page.push(JSON.parse(line) as T);
    if (page.length >= size) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}

/** A column every row has, with its value taken from the item (e.g. the change's id and kind). */
export interface LeadingColumn<T> {
  name: string;
  kind: Kind;
  required?: boolean;
  value: (item: T) => unknown;
}

/**
 * Record fields in first-seen order with the one type that holds all their values, learnt record by record — as
 * pages arrive, or in a pass of their own (`learnColumns`).
 */
export class ColumnLearner {
  private readonly seen = new Map<string, Kind | undefined>();
  constructor(private readonly skip: string[] = []) {}

  add(record: unknown): void {
    if (!record || typeof record !== 'object' || Array.isArray(record)) return;
    const r = record as Record<string, unknown>;
    for (const k of Object.keys(r)) {
      const now = kindOf(r[k]);
      const was = this.seen.get(k);
      // Most fields of most records: a kind already known (one lookup, no entry arrays — a tenth of a Parquet export's
      // CPU went to this walk).
      if (now === was && (now !== undefined || this.seen.has(k))) continue;
      if (this.skip.includes(k)) continue; // already a leading column
      if (!this.seen.has(k)) this.seen.set(k, now);
      else if (now && was && was !== now) this.seen.set(k, 'JSON');
      else if (now && !was) this.seen.set(k, now);
    }
  }

  columns(): Map<string, Kind> {
    return new Map([...this.seen].map(([k, v]) => [k, v ?? 'STRING']));
  }
}

async function learnColumns<T>(
  pages: () => AsyncIterable<T[]>,
  recordOf: (item: T) => unknown,
  skip: string[],
): Promise<Map<string, Kind>> {
  const learner = new ColumnLearner(skip);
  for await (const items of pages()) for (const item of items) learner.add(recordOf(item));
  return learner.columns();
}

const element = (name: string, kind: Kind, required = false): SchemaElement => ({
  name,
  type: kind === 'DOUBLE' ? 'DOUBLE' : kind === 'BOOLEAN' ? 'BOOLEAN' : 'BYTE_ARRAY',
  ...(kind === 'STRING'
    ? { converted_type: 'UTF8' as const }
    : kind === 'JSON'
      ? { converted_type: 'JSON' as const }
      : {}),
  repetition_type: required ? 'REQUIRED' : 'OPTIONAL',
});

/**
 * One column of the row group being gathered, its values as the writer takes them — filled row by row as pages
 * arrive, so that a row group's write does only the writer's own work (docs/benchmarks.md, "Export"):
 *
 * - text (STRING, and JSON as its JSON text) as UTF-8 bytes. The writer takes bytes as they are — its statistics and
 *   dictionary compare bytes, in the order UTF-8 gives code points, and the file is the same byte for byte — where it
 *   encoded each text with a TextEncoder, twice `Buffer.from`'s cost; and given a JSON value it copied it (`toJson`),
 *   serialised and encoded it. Values here come from JSON text, so serialising them is exact.
 * - a text that repeats (a status, a record's owner, its tags) encoded once and shared, so the writer's dictionary,
 *   which knows a value it has seen by its identity, hashes it once — unless the column is `distinct` (below).
 */
interface Gathering {
  name: string;
  kind: Kind;
  values: unknown[];
  /** Each text of this group once, as bytes; none for a column known to be distinct (each text encoded as it comes). */
  shared: Map<string, Buffer> | undefined;
  texts: number;
  /** A text column's statistics for its group, kept as its texts are encoded: empty cells, least and greatest text. */
  nulls: number;
  least?: Bound;
  greatest?: Bound;
}

/** A text and its UTF-8 bytes. */
type Bound = [text: string, bytes: Buffer];

/** Columns written as UTF-8 bytes: text, and JSON as its JSON text. */
const isText = (kind: Kind) => kind === 'STRING' || kind === 'JSON';

/** A text column is taken for one of distinct values (ids, titles, times) after a group of at least this many. */
const MIN_DISTINCT_SAMPLE = 500;

/**
 * The rows `[from, to)` of a text column as bytes, column by column: the bytes of one column's values then lie side by
 * side in memory, as the writer reads them (row by row, the writer's statistics took a third longer).
 */
function encodeTexts(column: Gathering, from: number, to: number): void {
  const { kind, values, shared } = column;
  if (!isText(kind)) return;
  for (let row = from; row < to; row++) {
    let v = values[row];
    if (v === null) {
      column.nulls++;
      continue;
    }
    if (kind === 'JSON') v = JSON.stringify(v);
    else if (typeof v !== 'string') continue;
    const text = v as string;
    column.texts++;
    let bytes = shared?.get(text);
    if (!bytes) {
      bytes = Buffer.from(text);
      shared?.set(text, bytes);
      // A text seen before in this group cannot change its least or greatest value: only new ones are compared.
      const entry: Bound = [text, bytes];
      if (!column.least || before(entry, column.least)) column.least = entry;
      if (!column.greatest || before(column.greatest, entry)) column.greatest = entry;
    }
    values[row] = bytes;
  }
}

/**
 * Whether text `a` comes before `b` as Parquet orders text: by its UTF-8 bytes. For ASCII (as many bytes as characters)
 * that is JavaScript's own order of strings; otherwise the bytes are compared (JavaScript orders U+E000–U+FFFF after
 * the surrogates of characters beyond U+FFFF, UTF-8 the other way round).
 */
const before = ([a, aBytes]: Bound, [b, bBytes]: Bound): boolean =>
  aBytes.length === a.length && bBytes.length === b.length ? a < b : Buffer.compare(aBytes, bBytes) < 0;

const cell = (v: unknown): unknown => (v === undefined ? null : v);

/** The file is written in pieces of about this size. */
const FILE_PIECE_BYTES = 1_000_000;

/**
 * hyparquet-writer's buffered file writer (its Node entry point's `fileWriter`, the same steps), which also hands each
 * piece it writes to `onBytes` — an export streams the file to Blob Storage while it is written.
 */
function fileWriter(
  writer: import('hyparquet-writer').ByteWriter,
  path: string,
  onBytes?: (bytes: Uint8Array) => void,
): import('hyparquet-writer').ByteWriter {
  writeFileSync(path, '');
  const grow = writer.ensure.bind(writer);
  const flush = () => {
    const piece = new Uint8Array(writer.buffer, 0, writer.index);
    appendFileSync(path, piece);
    onBytes?.(piece.slice()); // the writer reuses its buffer
    writer.index = 0;
  };
  writer.ensure = (size: number) => {
    if (writer.index > FILE_PIECE_BYTES) flush();
    grow(size);
  };
  writer.finish = flush;
  return writer;
}

type Writer = import('hyparquet-writer').ParquetWriter;
type ColumnChunk = import('hyparquet').ColumnChunk;
type TextStatistics = NonNullable<NonNullable<ColumnChunk['meta_data']>['statistics']>;
/** A column to write; a text column with its statistics, kept as its texts were encoded (`encodeTexts`). */
type Column = Pick<import('hyparquet-writer/src/types.js').ColumnSource, 'name' | 'data' | 'encoding'> & {
  statistics?: TextStatistics;
};

/**
 * One row group, as hyparquet-writer's `ParquetWriter.write` writes it (src/parquet-writer.js: the same calls for flat
 * columns, so the same bytes) — but a column per turn of the event loop. The write of a group holds the thread for
 * ~4 ms; a page's answer arriving meanwhile waited for all of it, and the next page was asked for only then (a trace
 * of every request of an export, docs/benchmarks.md "Export"). Between columns it is read and the next page asked for.
 */
async function writeRowGroup(w: Writer, columnData: Column[], rows: number): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { writeColumn } =
    require('hyparquet-writer/src/column.js') as typeof import('hyparquet-writer/types/column');
  const { encodeNestedValues } =
    require('hyparquet-writer/src/dremel.js') as typeof import('hyparquet-writer/types/dremel');
  const { schemaPathResolver } =
    require('hyparquet-writer/src/schema.js') as typeof import('hyparquet-writer/types/schema');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const resolve = schemaPathResolver(w.schema);
  const start = w.writer.offset;
  const columns: ColumnChunk[] = [];
  for (const { name, data, encoding, statistics } of columnData) {
    await new Promise<void>((r) => setImmediate(r));
    const path = resolve([name]); // a flat column: its own leaf
    const schemaPath = path.map((node) => node.element);
    const result = writeColumn({
      writer: w.writer,
      column: {
        columnName: name,
        element: schemaPath[schemaPath.length - 1],
        schemaPath,
        codec: w.codec,
        compressors: w.compressors,
        // A text column's statistics are known already: the writer's would compare every value's bytes again.
        stats: w.statistics && !statistics,
        statisticsTruncateLength: w.statisticsTruncateLength,
        pageSize: 1_048_576,
        dictionarySize: undefined,
        columnIndex: false,
        offsetIndex: true,
        encoding,
        bloomFilter: undefined,
      },
      pageData: encodeNestedValues(path, data),
    });
    const meta = result.chunk.meta_data;
    if (w.statistics && statistics && meta) {
      // What the writer records with its own statistics (src/column.js): these, and how its pages are encoded.
      meta.statistics = statistics;
      meta.encoding_stats = [
        ...(meta.dictionary_page_offset === undefined
          ? []
          : [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }]),
        {
          page_type: 'DATA_PAGE_V2' as const,
          encoding: meta.encodings[meta.encodings.length - 1],
          count: result.offsetIndex?.page_locations.length ?? 1,
        },
      ];
    }
    columns.push(result.chunk);
    w.pendingIndexes.push(result);
  }
  let total = 0n;
  for (const { meta_data } of columns) total += meta_data?.total_uncompressed_size ?? 0n;
  w.num_rows += BigInt(rows);
  w.row_groups.push({
    columns,
    total_byte_size: total,
    num_rows: BigInt(rows),
    total_compressed_size: BigInt(w.writer.offset - start),
  });
}

/**
 * Rows into one Parquet file as they come, in row groups of ROW_GROUP, with columns known before the first row:
 * the leading ones, then one per entry of `columns` (a field of `recordOf(item)`). `finish` writes the footer.
 *
 * Each row's values go to their columns as the row is added, and the group is written when full, a column per turn
 * (`writeRowGroup`). Each column's write holds the thread — a page's answer arriving meanwhile waits for it (a trace of
 * every request of an export: the ~50 requests in flight during a group's write took 7-8 ms against 2-2.5 ms) — so
 * what can be done a page at a time, while the next page is on its way, is not left to it: texts are encoded and their
 * least and greatest values kept as they come (`encodeTexts`).
 */
export class ParquetRows<T> {
  rows = 0;
  private readonly writer: Writer;
  private readonly json: SchemaElement[];
  /** Each column's schema element as the footer holds it (JSON columns annotated), by name. */
  private readonly footerElements: Map<string, import('hyparquet').SchemaElement>;
  /** Each written row group's entry of the footer, serialized (parquet-footer.ts). */
  private readonly entries: Array<Uint8Array | undefined> = [];
  /** Text columns whose values were all distinct in a group: encoded without a dictionary from then on. */
  private readonly distinct = new Set<string>();
  private readonly names: string[];
  private readonly position: Map<string, number>;
  private group: Gathering[];
  private size = 0;

  constructor(
    path: string,
    readonly columns: Map<string, Kind>,
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

  private entryOf(group: Writer['row_groups'][number]): Uint8Array | undefined {
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
      // Buffer's shared 8 KiB slabs, and each kept one held its whole slab to the end of the file (~5 MB more at 300 k
      // records, docs/benchmarks.md): copied, they hold their own bytes only.
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
    // Its entry of the footer, in a turn of its own: made now rather than at the end of the file (parquet-footer.ts).
    await new Promise<void>((r) => setImmediate(r));
    this.entries.push(this.entryOf(this.writer.row_groups[this.writer.row_groups.length - 1]));
    this.rows += size;
    this.size = 0;
    this.group = this.gathering();
  }
}

/** The same columns with the same types, in the same order: a file written with one is the file of the other. */
export const sameColumns = (a: Map<string, Kind>, b: Map<string, Kind>) =>
  a.size === b.size && [...a].every(([name, kind], i) => [...b][i][0] === name && [...b][i][1] === kind);

/**
 * Writes the items to `file` (via `file.tmp`, renamed when complete, so a reader never sees half a file): the
 * leading columns, then one per top-level field of `recordOf(item)`. Without `columns` (learnt already, as the
 * items arrived), `pages` is called twice and must yield the same items both times. Answers the number of rows.
 */
export async function writeParquet<T>(
  pages: () => AsyncIterable<T[]>,
  file: string,
  options: { leading: LeadingColumn<T>[]; recordOf: (item: T) => unknown; columns?: Map<string, Kind> },
): Promise<number> {
  const { leading, recordOf } = options;
  const columns =
    options.columns ??
    (await learnColumns(
      pages,
      recordOf,
      leading.map((c) => c.name),
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
  private readonly learner = new ColumnLearner();
  private early?: ParquetRows<unknown>;
  /** Whether a page changed the columns: it and the later ones are in the NDJSON file. */
  private late = false;

  constructor(
    private readonly file: string,
    /** Each piece of the file as it is written, while the columns hold (`rewrites` false). */
    private readonly options: { onBytes?: (bytes: Uint8Array) => void } = {},
  ) {}

  /** Whether a page changed the columns, so that `finish` writes the file again: pieces given so far are void. */
  get rewrites(): boolean {
    return this.late;
  }

  /** The file of the pages whose columns hold, its pieces handed on as they are written. */
  private rows(columns: Map<string, Kind>) {
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

/** What a Parquet file of changes does with a record it cannot hold as it is (shared/sinks/rejected.ts). */
export interface ChangesParquetOptions {
  stream: string;
  rejected?: RejectedPolicy;
  /** With `quarantine`: where the records set aside go, one JSON line each (`{id, reason, record}`). */
  quarantineFile?: string;
}

/**
 * A sync's changes: `change_id`, `kind`, `id`, `content_hash` (empty for a deletion), then the record's fields. A
 * record whose text UTF-8 cannot hold (a lone surrogate) fails the file naming it, or — with `quarantine` — is left
 * out of it and written to `quarantineFile`. Answers the rows written and the records set aside.
 */
export async function writeChangesParquet(
  pages: () => AsyncIterable<Change[]>,
  file: string,
  options: ChangesParquetOptions,
): Promise<{ rows: number; rejected: number }> {
  let rejected = 0;
  let learning = true;
  const quarantine: string[] = [];
  const flushQuarantine = async () => {
    if (!quarantine.length || !options.quarantineFile) return;
    await appendFile(options.quarantineFile, quarantine.join(''));
    quarantine.length = 0;
  };
  // Both passes see the same records: the first also sets the refused ones aside (or fails on the first of them).
  const storable = async function* () {
    for await (const page of pages()) {
      const { kept, rejected: refused } = sortOut(page, 'parquet');
      if (learning && refused.length) {
        if (options.rejected !== 'quarantine')
          throw rejectedError('Parquet', options.stream, refused[0], refused.length - 1);
        rejected += refused.length;
        for (const r of refused)
          quarantine.push(`${JSON.stringify({ id: r.id, reason: r.reason, record: r.json })}\n`);
        if (quarantine.length >= 1000) await flushQuarantine();
      }
      yield kept;
    }
    if (learning) await flushQuarantine();
    learning = false;
  };
  if (options.quarantineFile) await rm(options.quarantineFile, { force: true });
  const rows = await writeParquet(storable, file, {
    leading: [
      { name: 'change_id', kind: 'STRING', required: true, value: (c) => c.changeId },
      { name: 'kind', kind: 'STRING', required: true, value: (c) => c.kind },
      { name: 'id', kind: 'STRING', required: true, value: (c) => c.id },
      { name: 'content_hash', kind: 'STRING', value: (c) => (c.kind === 'deleted' ? null : c.changeId) },
    ],
    recordOf: (c) => c.record,
  });
  return { rows, rejected };
}
