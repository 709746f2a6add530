/*
 * The current-records table's commit: one row per key. A first load writes the rows as the changes come, in files of
 * about DELTA_ROWS_PER_FILE rows. After it, a run finds the rows its changes replace (only the `_key` column of the
 * files whose key range holds a changed key is read) and either marks them deleted in a deletion vector of their file
 * — no data rewritten: a run that changes 0.1 % of the table writes its new rows and a few bytes of log — or, on a
 * table without deletion vectors, writes each such file again without them. The new and changed rows go to new files.
 * Small files and files mostly deleted are laid out again once there are enough of them.
 */
import { rejectedError, type Change } from '../../changes';
import { ColumnLearner } from '../../formats/parquet';
import { hasDeletionVectors, type Action, type AddAction, type RemoveAction, type Snapshot } from './actions';
import { columnsOf, KEY_COLUMN, rowOf, type Columns } from './columns';
import { inlineVector } from './deletion-vectors';
import { deletedRows, findKeys, physicalRows, rowBatches } from './files';
import { columnsFor, RollingFiles, ROWS_PER_FILE, type CurrentContext } from './rolling';
import type { StagedChange } from './staged';

/** Small files (under a quarter of DELTA_ROWS_PER_FILE live rows) laid out again together once there are this many. */
const SMALL_FILES = 8;
/** A file whose deletion vector removes at least this share of its rows is laid out again with the small files. */
const MOSTLY_DELETED = 0.5;

/** Each changed key's last change in the run: its kind and its place in the run's order (`seq`). */
export type Latest = Map<string, { kind: Change['kind']; seq: number }>;

/** Each changed key's last change, and the fields' kinds, from one reading of the run's changes. */
export async function latestOf(
  pages: () => AsyncIterable<StagedChange[]>,
  fields?: readonly string[],
): Promise<{ latest: Latest; learner: ColumnLearner }> {
  const latest: Latest = new Map();
  const learner = new ColumnLearner([KEY_COLUMN], fields);
  let seq = 0;
  for await (const page of pages())
    for (const { change: c } of page) {
      latest.set(c.id, { kind: c.kind, seq: seq++ });
      if (c.kind !== 'deleted') learner.add(c.record);
    }
  return { latest, learner };
}

const rangeOf = (add: AddAction, column: string): [string, string] | undefined => {
  try {
    const s = JSON.parse(add.stats ?? '{}') as {
      minValues?: Record<string, unknown>;
      maxValues?: Record<string, unknown>;
    };
    const [lo, hi] = [s.minValues?.[column], s.maxValues?.[column]];
    return typeof lo === 'string' && typeof hi === 'string' ? [lo, hi] : undefined;
  } catch {
    return undefined;
  }
};

export const ASCII = /^[\x20-\x7e]*$/;

/**
 * Whether a file may hold one of `keys` (sorted, printable ASCII — where JavaScript orders texts as Parquet's
 * statistics do): its key column's range (`_key`; the changes table's `key`) holds one of them, or it has no range
 * to tell.
 */
export function mayHold(add: AddAction, keys: string[], others: boolean, column = KEY_COLUMN): boolean {
  const range = rangeOf(add, column);
  if (!range || others || !ASCII.test(range[0]) || !ASCII.test(range[1])) return true;
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < range[0]) lo = mid + 1;
    else hi = mid;
  }
  return lo < keys.length && keys[lo] <= range[1];
}

/** A `remove` of a file as the log names it (with its deletion vector, which makes it the file it is). */
export const removal = (file: AddAction, now: number, dataChange = true): Action => {
  const r: RemoveAction = {
    path: file.path,
    deletionTimestamp: now,
    dataChange,
    extendedFileMetadata: true,
    partitionValues: file.partitionValues ?? {},
    size: file.size,
    ...(file.tags ? { tags: file.tags } : {}),
    ...(file.deletionVector ? { deletionVector: file.deletionVector } : {}),
    ...(file.stats ? { stats: file.stats } : {}),
  };
  return { remove: r };
};

/** The statistics of a file whose deletion vector changed: the same counts, its bounds no longer tight. */
const widened = (add: AddAction) => {
  try {
    return JSON.stringify({ ...(JSON.parse(add.stats ?? '{}') as object), tightBounds: false });
  } catch {
    return add.stats;
  }
};

/**
 * The run's changes applied to a table that has rows (or a first load that must be written carefully): answers the
 * commit's actions and the records that did not fit the table's columns (quarantined, or the stream fails).
 */
export async function mergeCurrent(
  ctx: CurrentContext,
  snapshot: Snapshot,
  pages: () => AsyncIterable<StagedChange[]>,
  pass: {
    latest?: Latest;
    learner?: ColumnLearner;
    mark: Record<string, string>;
    configuration: Record<string, string>;
  },
): Promise<{ actions: Action[]; misfits: string[] }> {
  const { table, store, options } = ctx;
  const { latest, learner } =
    pass.latest && pass.learner
      ? { latest: pass.latest, learner: pass.learner }
      : await latestOf(pages, ctx.fields);
  const rowsPerFile = options.rowsPerFile ?? ROWS_PER_FILE;
  const now = options.clock.now();

  // The columns: as the table is made, every field the stream selects; after, a field added to the selection becomes
  // a column under SYNC_SCHEMA_CHANGES=propagate, and a column whose field went stays.
  const existing = snapshot.metaData
    ? columnsOf(snapshot.metaData.schemaString).filter(([n]) => n !== KEY_COLUMN)
    : undefined;
  const kinds = learner.kinds();
  let columns: Columns = existing ?? columnsFor(kinds, ctx.fields);
  let metaChanged = !existing;
  if (existing && options.schemaChanges === 'propagate') {
    const wanted = ctx.fields ?? [...kinds.keys()];
    const added = wanted.filter((f) => f !== KEY_COLUMN && !existing.some(([n]) => n === f));
    if (added.length) {
      columns = [...existing, ...columnsFor(kinds, added)];
      metaChanged = true;
    }
  }
  const configuration = { ...(snapshot.metaData?.configuration ?? {}), ...pass.configuration, ...pass.mark };
  if (Object.entries(configuration).some(([k, v]) => snapshot.metaData?.configuration[k] !== v))
    metaChanged = true;
  const actions: Action[] = [];
  if (metaChanged)
    actions.push({
      metaData: ctx.metaData([[KEY_COLUMN, 'string'], ...columns], configuration, snapshot.metaData?.id),
    });

  // The rows the run replaces or deletes, file by file: only the key column of files whose key range may hold one.
  const keys = [...latest.keys()].sort();
  const nonAscii = keys.some((k) => !ASCII.test(k));
  const touched: Array<{ add: AddAction; deleted: Set<number>; replaced: Set<number> }> = [];
  for (const add of snapshot.files.values()) {
    if (!mayHold(add, keys, nonAscii)) continue;
    const deleted = await deletedRows(store, table, add);
    const replaced = new Set((await findKeys(store, table, add, keys, deleted)).map(([row]) => row));
    if (replaced.size) touched.push({ add, deleted, replaced });
  }

  // The run's new and changed rows: each key's last change, in new files.
  const misfits: string[] = [];
  const fresh = new RollingFiles(ctx, columns, 'rows');
  try {
    let seq = 0;
    for await (const page of pages())
      for (const { change: c } of page) {
        const at = seq++;
        if (c.kind === 'deleted' || latest.get(c.id)?.seq !== at) continue;
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
        await fresh.add(made.row);
      }
    for (const add of await fresh.finish()) actions.push({ add });
  } catch (err) {
    await fresh.abandon();
    throw err;
  }

  // Rows replaced: in a deletion vector of their file, or (a table without them) the file written again without them.
  const vectors =
    hasDeletionVectors(snapshot.protocol) &&
    snapshot.metaData?.configuration['delta.enableDeletionVectors'] === 'true';
  const live = new Map<string, { add: AddAction; live: number; deleted: Set<number> }>();
  for (const add of snapshot.files.values()) live.set(add.path, { add, live: -1, deleted: new Set() });
  for (const t of touched) {
    const gone = new Set([...t.deleted, ...t.replaced]);
    const rows = physicalRows(t.add);
    actions.push(removal(t.add, now));
    live.delete(t.add.path);
    if (rows !== undefined && gone.size >= rows) continue; // every row gone: the file leaves the table
    if (vectors && rows !== undefined) {
      const next: AddAction = {
        ...t.add,
        modificationTime: t.add.modificationTime,
        dataChange: true,
        stats: widened(t.add),
        deletionVector: inlineVector(gone),
      };
      actions.push({ add: next });
      live.set(next.path, { add: next, live: rows - gone.size, deleted: gone });
      continue;
    }
    const rewrite = new RollingFiles(ctx, columns, 'rewrite');
    try {
      for await (const batch of rowBatches(store, table, t.add, gone))
        for (const row of batch) await rewrite.add(pick(row, columns));
      for (const add of await rewrite.finish()) actions.push({ add });
    } catch (err) {
      await rewrite.abandon();
      throw err;
    }
  }

  // Housekeeping in the same commit: small files, and files mostly deleted, laid out again together.
  const candidates = [...live.values()].filter(({ add, live: n, deleted }) => {
    const rows = physicalRows(add);
    if (rows === undefined) return false;
    const count = n >= 0 ? n : rows - (add.deletionVector?.cardinality ?? 0);
    return (
      count < rowsPerFile / 4 ||
      (deleted.size || add.deletionVector?.cardinality || 0) >= MOSTLY_DELETED * rows
    );
  });
  const mostlyDeleted = candidates.some(({ add, deleted }) => {
    const rows = physicalRows(add) ?? 0;
    return (
      rows >= rowsPerFile / 4 &&
      (deleted.size || add.deletionVector?.cardinality || 0) >= MOSTLY_DELETED * rows
    );
  });
  if (candidates.length >= SMALL_FILES || (mostlyDeleted && candidates.length)) {
    const compacted = new RollingFiles(ctx, columns, 'compact', false);
    try {
      for (const c of candidates) {
        const skip = c.live >= 0 ? c.deleted : await deletedRows(store, table, c.add);
        for await (const batch of rowBatches(store, table, c.add, skip))
          for (const row of batch) await compacted.add(pick(row, columns));
      }
      const adds = await compacted.finish();
      // A file the run touched already has its `remove` (and its new `add`): that `add` is taken back.
      for (const c of candidates) {
        const i = actions.findIndex((a) => 'add' in a && a.add.path === c.add.path);
        if (i >= 0) actions.splice(i, 1);
        else actions.push(removal(c.add, now, false));
      }
      for (const add of adds) actions.push({ add });
    } catch (err) {
      await compacted.abandon();
      throw err;
    }
  }
  return { actions, misfits };
}

/** A row read back as the table's columns (another engine's file may order them otherwise). */
const pick = (row: Record<string, unknown>, columns: Columns): Record<string, unknown> => {
  const out: Record<string, unknown> = { [KEY_COLUMN]: row[KEY_COLUMN] };
  for (const [name] of columns) out[name] = row[name] ?? null;
  return out;
};
