import type { ColumnKind } from './columns';

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
export interface Gathering {
  name: string;
  kind: ColumnKind;
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
export type Bound = [text: string, bytes: Buffer];

/** Columns written as UTF-8 bytes: text, and JSON as its JSON text. */
export const isText = (kind: ColumnKind) => kind === 'STRING' || kind === 'JSON';

/** A text column is taken for one of distinct values (ids, titles, times) after a group of at least this many. */
export const MIN_DISTINCT_SAMPLE = 500;

/**
 * The rows `[from, to)` of a text column as bytes, column by column: the bytes of one column's values then lie side by
 * side in memory, as the writer reads them (row by row, the writer's statistics took a third longer).
 */
export function encodeTexts(column: Gathering, from: number, to: number): void {
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

export const cell = (v: unknown): unknown => (v === undefined ? null : v);
