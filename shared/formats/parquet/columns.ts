/*
 * A Parquet file's columns: the one type that holds all of a field's values, learnt record by record, and the
 * schema elements that say it.
 */

export type ColumnKind = 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'JSON';

export interface SchemaElement {
  name: string;
  type?: 'BYTE_ARRAY' | 'DOUBLE' | 'BOOLEAN';
  converted_type?: 'UTF8' | 'JSON';
  repetition_type?: 'REQUIRED' | 'OPTIONAL';
  num_children?: number;
}

function kindOf(v: unknown): ColumnKind | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'number') return 'DOUBLE';
  if (typeof v === 'boolean') return 'BOOLEAN';
  if (typeof v === 'string') return 'STRING';
  return 'JSON';
}

/** A column every row has, with its value taken from the item (e.g. the change's id and kind). */
export interface LeadingColumn<T> {
  name: string;
  kind: ColumnKind;
  required?: boolean;
  value: (item: T) => unknown;
}

/**
 * Record fields in first-seen order with the one type that holds all their values, learnt record by record — as
 * pages arrive, or in a pass of their own (`learnColumns`).
 */
export class ColumnLearner {
  private readonly seen = new Map<string, ColumnKind | undefined>();
  private readonly allowed?: ReadonlySet<string>;
  /** Values under keys the stream does not select (a server that answers more than asked): counted, not columns. */
  unexpected = 0;

  constructor(
    private readonly skip: string[] = [],
    /** The record keys the stream selects: the only columns there may be (undefined: whatever records carry). */
    fields?: readonly string[],
  ) {
    if (fields) this.allowed = new Set(fields);
  }

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
      if (this.allowed && !this.allowed.has(k)) {
        this.unexpected++;
        continue;
      }
      if (!this.seen.has(k)) this.seen.set(k, now);
      else if (now && was && was !== now) this.seen.set(k, 'JSON');
      else if (now && !was) this.seen.set(k, now);
    }
  }

  columns(): Map<string, ColumnKind> {
    return new Map([...this.seen].map(([k, v]) => [k, v ?? 'STRING']));
  }

  /** The fields seen so far, each with its kind, or undefined when every value so far was null. */
  kinds(): ReadonlyMap<string, ColumnKind | undefined> {
    return this.seen;
  }
}

export async function learnColumns<T>(
  pages: () => AsyncIterable<T[]>,
  recordOf: (item: T) => unknown,
  skip: string[],
  fields?: readonly string[],
): Promise<Map<string, ColumnKind>> {
  const learner = new ColumnLearner(skip, fields);
  for await (const items of pages()) for (const item of items) learner.add(recordOf(item));
  return learner.columns();
}

export const element = (name: string, kind: ColumnKind, required = false): SchemaElement => ({
  name,
  type: kind === 'DOUBLE' ? 'DOUBLE' : kind === 'BOOLEAN' ? 'BOOLEAN' : 'BYTE_ARRAY',
  ...(kind === 'STRING'
    ? { converted_type: 'UTF8' as const }
    : kind === 'JSON'
      ? { converted_type: 'JSON' as const }
      : {}),
  repetition_type: required ? 'REQUIRED' : 'OPTIONAL',
});

/** The same columns with the same types, in the same order: a file written with one is the file of the other. */
export const sameColumns = (a: Map<string, ColumnKind>, b: Map<string, ColumnKind>) =>
  a.size === b.size && [...a].every(([name, kind], i) => [...b][i][0] === name && [...b][i][1] === kind);
