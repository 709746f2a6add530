import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamCounts } from '../../changes';
import { ndjson, pageName } from '../ndjson';
import type { ChangeBatch, ChangeSink, RunManifest, WriteOutcome } from '../types';
import type { EraseOutcome } from '../erase';
import { eraseFromTables } from './erase';
import { KEY_COLUMN, type Columns } from './columns';
import { mergeCurrent } from './current';
import type { Action, Snapshot } from './actions';
import { readSnapshot } from './log';
import { appIdOf, runVersion } from './marks';
import { quarantineOf, stagingOf, tablesOf } from './names';
import { CHANGE_COLUMNS, readOnce, type OnePass } from './one-pass';
import type { DeltaOptions } from './options';
import { claim, markOf, type TableRole } from './ownership';
import { housekeep } from './retention';
import type { CurrentContext, LocalFile } from './rolling';
import { StagedRun } from './staged';
import type { DeltaStore } from './store';
import { TableWriter, type RunMark } from './table-writer';

/**
 * `delta`: per stream, a table of the current records (`<stream>`, one row per key) and a table of every change
 * (`<stream>_changes`, appended), each in a place the sink owns (ownership.ts). Pages are staged under the current
 * table's hidden `_staging/` folder; when the stream's pass ends they are read once for both tables' files, and each
 * table gets one commit with the run's mark in its `txn` — a table whose mark is already there (a run resumed after a
 * crash, a step delivered twice) is not written again.
 */
export type { DeltaOptions } from './options';

export class DeltaSink implements ChangeSink {
  readonly description: string;
  readonly ownNames: readonly string[] = [];
  private readonly tables: TableWriter;
  /** Streams whose places this sink checked in this run (`${runId}\0${stream}`): checked once, before the first page. */
  private readonly claimed = new Map<string, Promise<void>>();

  constructor(
    readonly store: DeltaStore,
    readonly options: DeltaOptions,
  ) {
    this.description = `Delta tables in ${store.description}`;
    this.tables = new TableWriter(store, options);
  }

  /** The stream's two tables, side by side in the location: `orders`'s `orders_changes` is a stream's name too. */
  names(stream: string): string[] {
    const { current, changes } = tablesOf(stream);
    return [`${this.store.description}/${current}`, `${this.store.description}/${changes}`];
  }

  /** Both of the stream's tables are the sink's to write (or nothing is there yet), or the stream is refused. */
  private claimBoth(runId: string, stream: string): Promise<void> {
    const key = `${runId}\0${stream}`;
    let done = this.claimed.get(key);
    if (!done) {
      const { current, changes } = tablesOf(stream);
      done = Promise.all([
        readSnapshot(this.store, current).then((s) =>
          claim(this.store, current, { kind: 'current', stream }, s),
        ),
        readSnapshot(this.store, changes).then((s) =>
          claim(this.store, changes, { kind: 'changes', stream }, s),
        ),
      ]).then(() => undefined);
      done.catch(() => this.claimed.delete(key));
      this.claimed.set(key, done);
    }
    return done;
  }

  async write(batch: ChangeBatch, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    await this.claimBoth(batch.runId, batch.stream);
    const path = `${stagingOf(batch.stream, batch.runId)}/${pageName(batch.page)}.ndjson`;
    await this.store.stage(path, ndjson(batch.changes), options);
  }

  async endStream(
    tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    _counts?: StreamCounts,
    options: { fields?: readonly string[] } = {},
  ): Promise<WriteOutcome | void> {
    const run: RunMark = { appId: appIdOf(tenant), version: runVersion(runId), runId };
    const tables = tablesOf(stream);
    const scratch = await mkdtemp(join(tmpdir(), 'ti-delta-'));
    const staged = new StagedRun(
      this.store,
      stream,
      stagingOf(stream, runId),
      changedPages,
      scratch,
      this.options.rejected,
    );
    const misfits = new Set<string>();
    try {
      // Checked on every run, changes or not: a place taken by something else is said every time, not once.
      const [changesAt, currentAt] = await Promise.all([
        readSnapshot(this.store, tables.changes),
        readSnapshot(this.store, tables.current),
      ]);
      await claim(this.store, tables.changes, { kind: 'changes', stream }, changesAt);
      await claim(this.store, tables.current, { kind: 'current', stream }, currentAt);
      const due = (s: Snapshot) => changedPages.length > 0 && (s.txns.get(run.appId) ?? -1) < run.version;
      if (due(changesAt) || due(currentAt)) {
        const current = this.currentContext(tables.current, scratch, options.fields);
        const pass = await readOnce(
          staged,
          { runId, scratch },
          due(changesAt) ? changesAt : undefined,
          due(currentAt) ? currentAt : undefined,
          current,
          (file) => this.tables.put(tables.changes, file),
        );
        try {
          if (pass.changes) await this.commitChanges(stream, run, changesAt, pass);
        } catch (err) {
          await pass.first?.abandon();
          throw err;
        }
        if (due(currentAt))
          for (const m of await this.commitCurrent(stream, run, currentAt, pass, current, staged))
            misfits.add(m);
      }
      for (const m of staged.quarantine) misfits.add(m);
      // What was set aside, beside the table (a hidden folder: Delta readers skip it), for the operator to look at.
      if (misfits.size) await this.store.put(quarantineOf(stream, runId), `${[...misfits].join('\n')}\n`);
      await this.store.removeAll(stagingOf(stream, runId));
      this.claimed.delete(`${runId}\0${stream}`);
      for (const table of [tables.current, tables.changes])
        await housekeep(this.store, table, {
          now: this.options.clock.now(),
          retentionHours: this.options.retentionHours,
          checkpointInterval: this.options.checkpointInterval,
          staging: table === tables.current ? `${stream}/_staging` : undefined,
        });
      return { rejected: misfits.size };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /** The changes table's commit: the run's file (and the table's metadata, when it is made). */
  private commitChanges(stream: string, run: RunMark, at: Snapshot, pass: OnePass): Promise<void> {
    const role: TableRole = { kind: 'changes', stream };
    const table = tablesOf(stream).changes;
    return this.tables.commitOnce(table, role, run, at, async (s) => [
      ...(s.version < 0
        ? [{ metaData: this.tables.metaData(table, CHANGE_COLUMNS, this.tables.newTable(role)) }]
        : []),
      ...this.tables.marked(s, role),
      ...(pass.changes ? [{ add: pass.changes }] : []),
    ]);
  }

  /** The current table's commit: the first load's files, or the merge of the run's changes. Answers the misfits. */
  private async commitCurrent(
    stream: string,
    run: RunMark,
    at: Snapshot,
    pass: OnePass,
    current: CurrentContext,
    staged: StagedRun,
  ): Promise<string[]> {
    const role: TableRole = { kind: 'current', stream };
    const table = tablesOf(stream).current;
    const misfits: string[] = [];
    let first = pass.first;
    await this.tables.commitOnce(table, role, run, at, async (s) => {
      // The first load's files, written as the pages were read, fit only the table as it was then (none).
      const made = s.version === at.version ? await first?.finish() : undefined;
      if (first && !made) await first.abandon();
      first = undefined;
      if (made)
        return [
          {
            metaData: this.tables.metaData(
              table,
              [[KEY_COLUMN, 'string'], ...made.columns],
              this.tables.newTable(role),
            ),
          },
          ...made.adds.map((add): Action => ({ add })),
        ];
      const merged = await mergeCurrent(current, s, () => staged.changes(), {
        ...(s === at ? pass.current : {}),
        mark: markOf(role),
        configuration: s.version < 0 ? this.tables.newTable(role) : {},
      });
      misfits.push(...merged.misfits);
      return merged.actions;
    });
    return misfits;
  }

  private currentContext(table: string, scratch: string, fields?: readonly string[]): CurrentContext {
    return {
      table,
      store: this.store,
      options: this.options,
      scratch,
      fields,
      put: (file: LocalFile, o?: { dataChange?: boolean }) => this.tables.put(table, file, o),
      metaData: (columns: Columns, configuration: Record<string, string>, id?: string) =>
        this.tables.metaData(table, columns, configuration, id),
    };
  }

  /** Nothing held open: its clients close with the process. */
  async close(): Promise<void> {}

  /** The key's row and every change of it, out of both tables' files (./erase.ts). */
  erase(tenant: string, stream: string, key: string): Promise<EraseOutcome> {
    return eraseFromTables(this.store, this.tables, () => this.options.clock.now(), tenant, stream, key);
  }

  async finish(_manifest: RunManifest): Promise<void> {
    // Each table was committed when its stream's pass ended; the run's manifest is the run history's.
  }
}
