import { rename, rm } from 'node:fs/promises';
import type { Change } from './changes';

/**
 * Changes as one Parquet file (hyparquet-writer, snappy): the columns `change_id`, `kind`, `id` and
 * `content_hash` (the change id of a create or update; empty for a deletion), then one column per top-level field
 * of the records. A field whose values are all numbers is DOUBLE, all booleans BOOLEAN, all strings STRING; objects,
 * lists and mixed values are JSON text (Parquet's JSON type). Two passes over the pages — one to learn the columns
 * and their types, one to write — with at most ROW_GROUP changes in memory at a time, so memory stays flat.
 */
export const ROW_GROUP = 10_000;

type Kind = 'DOUBLE' | 'BOOLEAN' | 'STRING' | 'JSON';
const FIXED = ['change_id', 'kind', 'id', 'content_hash'] as const;

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

/** Record fields in first-seen order with the one type that holds all their values. */
async function learnColumns(pages: () => AsyncIterable<Change[]>): Promise<Map<string, Kind>> {
  const columns = new Map<string, Kind | undefined>();
  for await (const changes of pages())
    for (const c of changes) {
      if (!c.record || typeof c.record !== 'object' || Array.isArray(c.record)) continue;
      for (const [k, v] of Object.entries(c.record as Record<string, unknown>)) {
        if ((FIXED as readonly string[]).includes(k)) continue; // `id` is already a column of its own
        const now = kindOf(v);
        const was = columns.get(k);
        if (!columns.has(k)) columns.set(k, now);
        else if (now && was && was !== now) columns.set(k, 'JSON');
        else if (now && !was) columns.set(k, now);
      }
    }
  return new Map([...columns].map(([k, v]) => [k, v ?? 'STRING']));
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

function cell(kind: Kind, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (kind === 'JSON') return JSON.stringify(v);
  return v;
}

/**
 * Writes the pages' changes to `file` (via `file.tmp`, renamed when complete, so a reader never sees half a file).
 * `pages` is called twice and must yield the same changes both times. Answers the number of rows.
 */
export async function writeChangesParquet(
  pages: () => AsyncIterable<Change[]>,
  file: string,
): Promise<number> {
  const columns = await learnColumns(pages);
  // Loaded on first use (an ES module; Node 22 requires it synchronously): only Parquet output pays for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { ParquetWriter, fileWriter } = require('hyparquet-writer') as typeof import('hyparquet-writer') & {
    fileWriter(path: string): import('hyparquet-writer').ByteWriter; // the Node entry point's buffered file writer
  };
  const schema: SchemaElement[] = [
    { name: 'root', num_children: FIXED.length + columns.size },
    element('change_id', 'STRING', true),
    element('kind', 'STRING', true),
    element('id', 'STRING', true),
    element('content_hash', 'STRING'),
    ...[...columns].map(([name, kind]) => element(name, kind)),
  ];
  const tmp = `${file}.tmp`;
  const writer = new ParquetWriter({ writer: fileWriter(tmp), schema: schema as never, codec: 'SNAPPY' });
  let rows = 0;
  let group: Change[] = [];
  const flush = () => {
    if (!group.length) return;
    const field = (c: Change, name: string) =>
      c.record && typeof c.record === 'object' ? (c.record as Record<string, unknown>)[name] : undefined;
    writer.write({
      rowGroupSize: ROW_GROUP,
      columnData: [
        { name: 'change_id', data: group.map((c) => c.changeId) },
        { name: 'kind', data: group.map((c) => c.kind) },
        { name: 'id', data: group.map((c) => c.id) },
        { name: 'content_hash', data: group.map((c) => (c.kind === 'deleted' ? null : c.changeId)) },
        ...[...columns].map(([name, kind]) => ({ name, data: group.map((c) => cell(kind, field(c, name))) })),
      ] as never,
    });
    rows += group.length;
    group = [];
  };
  try {
    for await (const changes of pages())
      for (const c of changes) {
        group.push(c);
        if (group.length >= ROW_GROUP) flush();
      }
    flush();
    writer.finish();
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return rows;
}
