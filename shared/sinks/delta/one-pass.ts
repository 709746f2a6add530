/*
 * A run's staged pages of a stream read once for both tables: every change into the changes table's file, and into the
 * current table — its rows written as they come on a first load, else each key's last change noted for the merge.
 */
import { join } from 'node:path';
import { ColumnLearner } from '../../formats/parquet';
import type { AddAction, Snapshot } from './actions';
import { DataFileWriter, KEY_COLUMN, type Columns } from './columns';
import type { Latest } from './current';
import { FirstLoad } from './first-load';
import type { CurrentContext } from './rolling';
import { recordText, type StagedChange, type StagedRun } from './staged';

/** The changes table: every change once, its record as the JSON the sync made of it. */
export const CHANGE_COLUMNS: Columns = [
  ['change_id', 'string'],
  ['kind', 'string'],
  ['key', 'string'],
  ['record', 'string'],
  ['run_id', 'string'],
];

const changeRow = (s: StagedChange, runId: string): Record<string, unknown> => ({
  change_id: s.change.changeId,
  kind: s.change.kind,
  key: s.change.id,
  record: recordText(s),
  run_id: runId,
});

export interface OnePass {
  /** The changes table's new file, uploaded (when its commit is due). */
  changes?: AddAction;
  /** The current table's merge, from what the pass noted (when its commit is due and the table exists). */
  current?: { latest?: Latest; learner?: ColumnLearner };
  /** The current table's first load (when it is due and there is no table yet). */
  first?: FirstLoad;
}

/**
 * Reads the run's pages once. `changesAt` / `currentAt`: the tables as they are, when their commits are due.
 * `putChanges` uploads the changes table's file.
 */
export async function readOnce(
  staged: StagedRun,
  run: { runId: string; scratch: string },
  changesAt: Snapshot | undefined,
  currentAt: Snapshot | undefined,
  current: CurrentContext,
  putChanges: (file: Awaited<ReturnType<DataFileWriter['finish']>>) => Promise<AddAction>,
): Promise<OnePass> {
  const log =
    changesAt &&
    new DataFileWriter(join(run.scratch, 'changes.parquet'), CHANGE_COLUMNS, [
      'change_id',
      'kind',
      'key',
      'run_id',
    ]);
  // A first load: no table yet (a table that exists keeps its columns, empty or not).
  const first = currentAt && currentAt.version < 0 ? new FirstLoad(current) : undefined;
  const latest: Latest | undefined = currentAt && !first ? new Map() : undefined;
  const learner = latest && new ColumnLearner([KEY_COLUMN], current.fields);
  let seq = 0;
  try {
    for await (const page of staged.changes()) {
      if (log) await log.add(page.map((s) => changeRow(s, run.runId)));
      for (const { change: c } of page) {
        if (first) await first.add(c);
        else if (latest) {
          latest.set(c.id, { kind: c.kind, seq: seq++ });
          if (c.kind !== 'deleted') learner?.add(c.record);
        }
      }
    }
    return {
      ...(log ? { changes: await putChanges(await log.finish()) } : {}),
      ...(currentAt && !first ? { current: { latest, learner } } : {}),
      ...(first ? { first } : {}),
    };
  } catch (err) {
    await log?.abandon();
    await first?.abandon();
    throw err;
  }
}
