/*
 * Retention, as Delta's VACUUM keeps it: a data file the latest version does not use is deleted once it has not been
 * part of the table for the retention period — removed by a commit that long ago, or never committed at all (a
 * writer that stopped between writing a file and committing it) and written that long ago. A reader of any version
 * within the period finds every file it needs. Hidden folders (`_delta_log`, `_staging`, `_quarantine`) are not
 * data; the log itself is kept whole.
 */
import { readSnapshot } from './log';
import type { DeltaStore } from './store';

/** Deletes the table's files no version since `cutoffMs` needs; answers how many. */
export async function vacuum(
  store: DeltaStore,
  table: string,
  cutoffMs: number,
  options: { abortSignal?: AbortSignal } = {},
): Promise<number> {
  const snapshot = await readSnapshot(store, table, options);
  if (snapshot.version < 0) return 0;
  let deleted = 0;
  for (const file of await store.list(table, options)) {
    const path = file.path.slice(table.length + 1);
    if (path.split('/').some((part) => part.startsWith('_') || part.startsWith('.'))) continue;
    if (snapshot.files.has(path)) continue;
    const removed = snapshot.tombstones.get(path);
    const goneSince = removed ? removed.deletionTimestamp : file.modifiedMs;
    if (goneSince >= cutoffMs) continue;
    await store.remove(file.path, options);
    deleted++;
  }
  return deleted;
}
