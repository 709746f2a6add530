/*
 * One record erased from a stream's two tables (../erase.ts). Every data file of the table's current version that
 * holds the key is written again without its rows — physically, never in a deletion vector, so the values leave the
 * files the table reads — and the table gets one commit (operation DELETE) removing the old files and adding the new.
 * The old files stay for time travel until the table's retention has passed, when a run's housekeeping deletes them
 * (docs/personal-data.md). Pages staged by a run not committed yet, and records set aside, are written again too.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EraseOutcome } from '../erase';
import { linesWithout } from '../erase';
import type { Action } from './actions';
import { columnsOf, DataFileWriter, KEY_COLUMN } from './columns';
import { ASCII, mayHold, removal } from './current';
import { deletedRows, findKeys, physicalRows, rowBatches } from './files';
import { readSnapshot } from './log';
import { appIdOf } from './marks';
import { tablesOf } from './names';
import { claim, type TableRole } from './ownership';
import type { DeltaStore } from './store';
import type { TableWriter } from './table-writer';

/** The columns each table's rows must have: its key, and a change's id, kind and run. */
const REQUIRED: Record<TableRole['kind'], string[]> = {
  current: [KEY_COLUMN],
  changes: ['change_id', 'kind', 'key', 'run_id'],
};

export async function eraseFromTables(
  store: DeltaStore,
  tables: TableWriter,
  now: () => number,
  tenant: string,
  stream: string,
  key: string,
): Promise<EraseOutcome> {
  const erased: EraseOutcome['erased'] = [];
  const names = tablesOf(stream);
  const scratch = await mkdtemp(join(tmpdir(), 'ti-delta-erase-'));
  try {
    for (const role of [
      { kind: 'current', stream },
      { kind: 'changes', stream },
    ] as TableRole[]) {
      const table = role.kind === 'current' ? names.current : names.changes;
      const at = await readSnapshot(store, table);
      if (at.version < 0) continue;
      // Only a table the sink made is erased in: another engine's is refused, as a run refuses it.
      await claim(store, table, role, at);
      const column = role.kind === 'current' ? KEY_COLUMN : 'key';
      let count = 0;
      // Its own mark: an erasure is no run, and must never read as one's commit.
      const mark = { appId: `${appIdOf(tenant)}/erase`, version: now(), runId: `erase` };
      await tables.commitOnce(
        table,
        role,
        mark,
        at,
        async (s) => {
          count = 0;
          const actions: Action[] = [];
          const columns = s.metaData ? columnsOf(s.metaData.schemaString) : [];
          let n = 0;
          for (const add of s.files.values()) {
            // A file whose key range cannot hold the key is not read (its statistics in the log say so).
            if (!mayHold(add, [key], !ASCII.test(key), column)) continue;
            const deleted = await deletedRows(store, table, add);
            const found = await findKeys(store, table, add, [key], deleted, column);
            if (!found.length) continue;
            count += found.length;
            actions.push(removal(add, now()));
            const gone = new Set([...deleted, ...found.map(([row]) => row)]);
            const rows = physicalRows(add);
            if (rows !== undefined && gone.size >= rows) continue; // nothing else in it: the file leaves
            const writer = new DataFileWriter(
              join(scratch, `erase-${n++}.parquet`),
              columns,
              REQUIRED[role.kind],
            );
            try {
              for await (const batch of rowBatches(store, table, add, gone))
                await writer.add(
                  batch.map((r) => Object.fromEntries(columns.map(([c]) => [c, r[c] ?? null]))),
                );
              if (!writer.rows) {
                await writer.abandon();
                continue;
              }
              actions.push({ add: await tables.put(table, await writer.finish()) });
            } catch (err) {
              await writer.abandon();
              throw err;
            }
          }
          return actions;
        },
        true,
      );
      if (count) erased.push({ place: `${store.description}/${table}`, count });
    }
    // What a run staged and has not committed yet, and what runs set aside: lines of the key's changes.
    for (const folder of [`${names.current}/_staging`, `${names.current}/_quarantine`])
      for await (const f of store.list(folder)) {
        if (!f.path.endsWith('.ndjson')) continue;
        const text = (await store.read(f.path))?.toString('utf8');
        if (text === undefined) continue;
        const left = linesWithout(text, key);
        if (!left.removed) continue;
        await store.put(f.path, left.text);
        erased.push({ place: `${store.description}/${f.path}`, count: left.removed });
      }
    return { erased };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
