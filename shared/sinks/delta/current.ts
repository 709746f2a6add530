/*
 * The current-records table's commit. Keys are spread over buckets by a hash (marks.ts), one data file a bucket
 * (tagged `bucket`); a commit rewrites only the buckets that hold a changed key. As the table grows past about twice
 * DELTA_ROWS_PER_FILE rows a bucket, its buckets are multiplied and every file laid out again, once; a file without
 * this sink's tag (another engine's OPTIMIZE rewrote it) is laid out again with the first commit that finds it.
 */
import { appendFile, mkdtemp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rejectedError, type Change, type StreamCounts } from '../../changes';
import { IntegrationError } from '../../errors';
import { ColumnLearner } from '../../formats/parquet';
import { columnsOf, dataFile, deltaTypeOf, KEY_COLUMN, readDataFile, rowOf, type Columns } from './columns';
import type { Action, AddAction, MetaDataAction, Snapshot } from './actions';
import { bucketOf } from './marks';
import type { DeltaOptions } from './options';
import type { DeltaStore } from './store';

/** Where the current table's layout is kept: how many buckets its keys are spread over. */
export const BUCKETS = 'tenantIntegrations.buckets';
/** About this many rows a data file of the current table (the default of DELTA_ROWS_PER_FILE). */
export const ROWS_PER_FILE = 10_000;
const MAX_BUCKETS = 1024;

/** What the merge needs of the sink: its store and options, and how it names a data file and a schema. */
export interface MergeContext {
  table: string;
  store: DeltaStore;
  options: DeltaOptions;
  put(file: { local: string; size: number }, stats: string, tags: Record<string, string>): Promise<AddAction>;
  metaData(columns: Columns, configuration: Record<string, string>, id?: string): MetaDataAction;
}

const bucketsFor = (rows: number, rowsPerFile: number) =>
  Math.min(MAX_BUCKETS, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(rows / rowsPerFile)))));

const rowsIn = (add: AddAction) => {
  try {
    return Number((JSON.parse(add.stats ?? '{}') as { numRecords?: number }).numRecords ?? 0);
  } catch {
    return 0;
  }
};

/** The table's next version: the pass's changes applied to the buckets they touch (and a new layout when due). */
export async function mergeCurrent(
  ctx: MergeContext,
  snapshot: Snapshot,
  pages: () => AsyncIterable<Change[]>,
  pass: { counts?: StreamCounts; fields?: readonly string[]; scratch: string },
): Promise<{ actions: Action[]; misfits: string[] }> {
  const { table, store, options } = ctx;
  const rowsPerFile = options.rowsPerFile ?? ROWS_PER_FILE;
  const scratch = await mkdtemp(join(pass.scratch, 'merge-')); // an attempt of its own: a retry starts clean
  // The key column first, then the record's fields (`columns`).
  const existing = snapshot.metaData
    ? columnsOf(snapshot.metaData.schemaString).filter(([n]) => n !== KEY_COLUMN)
    : undefined;
  const had = snapshot.metaData ? Number(snapshot.metaData.configuration[BUCKETS] ?? 1) || 1 : 0;
  const rows = [...snapshot.files.values()].reduce((n, f) => n + rowsIn(f), 0) + (pass.counts?.created ?? 0);
  const grown = had > 0 && rows > 2 * had * rowsPerFile && bucketsFor(rows, rowsPerFile) > had;
  const buckets = had && !grown ? had : bucketsFor(rows, rowsPerFile);

  // Files laid out again: all of them when the buckets change, else those without a bucket of this layout.
  const byBucket = new Map<number, AddAction[]>();
  const relaid: AddAction[] = [];
  for (const add of snapshot.files.values()) {
    const b = Number(add.tags?.bucket ?? NaN);
    if (grown || !Number.isInteger(b) || b < 0 || b >= buckets) relaid.push(add);
    else byBucket.set(b, [...(byBucket.get(b) ?? []), add]);
  }
  const readFileOf = async (add: AddAction) => {
    const bytes = await store.read(`${table}/${add.path}`);
    if (!bytes)
      throw new IntegrationError(
        'sink_failed',
        `Delta table ${table}: its log names ${add.path}, which is not in ${store.description} (removed by hand?); start the stream over with \`tenant-integrations sync --full\` into an empty location`,
      );
    return readDataFile(bytes);
  };

  // Every change, and every row of a file laid out again (first: the changes come after them), into its bucket's
  // scratch file, a thousand lines at a time.
  const learner = new ColumnLearner([KEY_COLUMN], pass.fields);
  const touched = new Map<number, string>();
  const pending = new Map<number, string[]>();
  const spill = async (bucket: number) => {
    const lines = pending.get(bucket);
    if (lines?.length) await appendFile(touched.get(bucket) as string, `${lines.join('\n')}\n`);
    pending.set(bucket, []);
  };
  const add = async (id: string, line: string) => {
    const b = bucketOf(id, buckets);
    if (!touched.has(b)) touched.set(b, join(scratch, `bucket-${b}.ndjson`));
    const lines = pending.get(b) ?? [];
    lines.push(line);
    pending.set(b, lines);
    if (lines.length >= 1_000) await spill(b);
  };
  for (const file of relaid)
    for (const row of await readFileOf(file)) {
      const { [KEY_COLUMN]: key, ...record } = row;
      await add(String(key), JSON.stringify({ kind: 'kept', id: key, record }));
    }
  for await (const changes of pages())
    for (const c of changes) {
      if (c.kind !== 'deleted') learner.add(c.record);
      await add(c.id, JSON.stringify(c));
    }
  for (const b of [...pending.keys()]) await spill(b);

  // The table's columns: as it is made, every field the stream selects (in its order); after, a field added to the
  // selection becomes a column under SYNC_SCHEMA_CHANGES=propagate, and a column whose field went stays.
  const learnt = learner.columns();
  const wanted = pass.fields ?? [...learnt.keys()];
  let columns: Columns =
    existing ?? wanted.filter((f) => f !== KEY_COLUMN).map((f) => [f, deltaTypeOf(learnt.get(f))]);
  let schemaChanged = !existing;
  if (existing && options.schemaChanges === 'propagate') {
    const added = wanted.filter((f) => f !== KEY_COLUMN && !existing.some(([n]) => n === f));
    if (added.length) {
      columns = [...existing, ...added.map((f): Columns[number] => [f, deltaTypeOf(learnt.get(f))])];
      schemaChanged = true;
    }
  }

  const actions: Action[] = [];
  if (schemaChanged || buckets !== had)
    actions.push({
      metaData: ctx.metaData(
        [[KEY_COLUMN, 'string'], ...columns],
        { ...(snapshot.metaData?.configuration ?? {}), [BUCKETS]: String(buckets) },
        snapshot.metaData?.id,
      ),
    });
  const now = options.clock.now();
  const remove = (file: AddAction): Action => ({
    remove: {
      path: file.path,
      deletionTimestamp: now,
      dataChange: true,
      extendedFileMetadata: true,
      partitionValues: {},
      size: file.size,
      ...(file.tags ? { tags: file.tags } : {}),
    },
  });
  for (const file of relaid) actions.push(remove(file));
  const misfits: string[] = [];
  for (const [bucket, spilled] of [...touched].sort((a, b) => a[0] - b[0])) {
    const current = new Map<string, Record<string, unknown>>();
    const old = byBucket.get(bucket) ?? [];
    for (const file of old)
      for (const row of await readFileOf(file)) current.set(String(row[KEY_COLUMN]), row);
    for (const line of (await readFile(spilled, 'utf8')).split('\n')) {
      if (!line) continue;
      const c = JSON.parse(line) as Omit<Change, 'kind'> & { kind: Change['kind'] | 'kept' };
      if (c.kind === 'deleted') {
        current.delete(c.id);
        continue;
      }
      const made = rowOf(c.id, c.record, columns);
      if ('misfit' in made) {
        if (options.rejected !== 'quarantine')
          throw rejectedError(
            'Delta',
            table,
            { id: c.id, reason: made.misfit, json: JSON.stringify(c.record) },
            0,
          );
        misfits.push(JSON.stringify({ id: c.id, reason: made.misfit, record: c.record }));
        continue;
      }
      current.set(c.id, made.row);
    }
    for (const file of old) actions.push(remove(file));
    if (current.size) {
      const { local, size, stats } = await dataFile(
        [[...current.values()]],
        [[KEY_COLUMN, 'string'], ...columns],
        join(scratch, `bucket-${bucket}.parquet`),
      );
      actions.push({ add: await ctx.put({ local, size }, stats.toJSON(), { bucket: String(bucket) }) });
    }
  }
  return { actions, misfits };
}
