/*
 * How the sink writes a table of its own: a data file under a fresh name of its own, with its tag; a new table's
 * metadata, with the mark and its configuration; and a commit made once per run — the run's mark in the `txn` — retried
 * as the protocol says when another writer takes the version first.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { IntegrationError } from '../../errors';
import { schemaString, type Columns } from './columns';
import {
  DV_PROTOCOL,
  PLAIN_PROTOCOL,
  unwritable,
  type Action,
  type AddAction,
  type Snapshot,
} from './actions';
import { commit, readSnapshot } from './log';
import { ENGINE } from './marks';
import { dataFileName, WRITER_TAG } from './names';
import type { DeltaOptions } from './options';
import { claim, isMarked, markOf, type TableRole } from './ownership';
import { retentionOf } from './retention';
import type { LocalFile } from './rolling';
import type { DeltaStore } from './store';

/** Which run commits, and as whom: the `txn` it carries. */
export interface RunMark {
  appId: string;
  /** The run's mark (its start in milliseconds): a table whose `txn` for `appId` has it has this run's commit. */
  version: number;
  runId: string;
}

export class TableWriter {
  constructor(
    readonly store: DeltaStore,
    readonly options: DeltaOptions,
  ) {}

  /** A data file stored under a fresh name of the sink's own, and the `add` that names it. */
  async put(table: string, file: LocalFile, options: { dataChange?: boolean } = {}): Promise<AddAction> {
    const path = dataFileName();
    try {
      await this.store.putFile(`${table}/${path}`, file.local);
    } finally {
      await rm(file.local, { force: true });
    }
    return {
      path,
      partitionValues: {},
      size: file.size,
      modificationTime: this.options.clock.now(),
      dataChange: options.dataChange ?? true,
      stats: file.stats.toJSON(),
      tags: { ...WRITER_TAG },
    };
  }

  metaData(table: string, columns: Columns, configuration: Record<string, string>, id?: string) {
    return {
      id: id ?? randomUUID(),
      name: table,
      format: { provider: 'parquet' as const, options: {} },
      schemaString: schemaString(columns),
      partitionColumns: [],
      configuration,
      createdTime: this.options.clock.now(),
    };
  }

  /** A new table's configuration: the mark, retention, and deletion vectors as DELTA_DELETION_VECTORS says. */
  newTable(role: TableRole): Record<string, string> {
    return {
      ...markOf(role),
      'delta.deletedFileRetentionDuration': `interval ${this.options.retentionHours} hours`,
      ...(this.vectors(role) ? { 'delta.enableDeletionVectors': 'true' } : {}),
    };
  }

  /** A table of the sink's first release, marked by its next commit (its metaData again, with the mark). */
  marked(s: Snapshot, role: TableRole): Action[] {
    if (s.version < 0 || isMarked(s.metaData) || !s.metaData) return [];
    return [{ metaData: { ...s.metaData, configuration: { ...s.metaData.configuration, ...markOf(role) } } }];
  }

  /** Deletion vectors for a new table: only a current-records table's rows are ever replaced. */
  private vectors(role: TableRole) {
    return Boolean(this.options.deletionVectors) && role.kind === 'current';
  }

  /**
   * Commits what `build` makes as the table's next version, with the run's mark — unless the mark is there already.
   * Another writer taking the version first: the table is read again (and must still be the sink's) and the commit
   * made afresh (three times).
   */
  async commitOnce(
    table: string,
    role: TableRole,
    run: RunMark,
    first: Snapshot,
    build: (snapshot: Snapshot) => Promise<Action[]>,
    /** An erasure's: `DELETE`, and nothing committed when `build` finds nothing to do. */
    erasing = false,
  ): Promise<void> {
    const operation = erasing ? 'DELETE' : role.kind === 'changes' ? 'WRITE' : 'MERGE';
    let snapshot = first;
    for (let attempt = 1; attempt <= 3; attempt++) {
      if (attempt > 1) {
        snapshot = await readSnapshot(this.store, table);
        await claim(this.store, table, role, snapshot);
      }
      if ((snapshot.txns.get(run.appId) ?? -1) >= run.version) return; // this run's commit is there
      const refused = unwritable(snapshot.protocol, snapshot.metaData);
      if (refused)
        throw new IntegrationError(
          'sink_failed',
          `Delta table ${table}: ${refused}, which this sink does not write; give the delta sink a location of its own`,
        );
      const actions = await build(snapshot);
      if (erasing && !actions.length) return;
      const now = this.options.clock.now();
      const retention = retentionOf(snapshot.metaData, this.options);
      const version = await commit(
        this.store,
        table,
        snapshot,
        [
          {
            commitInfo: {
              timestamp: now,
              operation,
              operationParameters: { runId: run.runId },
              engineInfo: ENGINE,
            },
          },
          ...(snapshot.version < 0
            ? [{ protocol: { ...(this.vectors(role) ? DV_PROTOCOL : PLAIN_PROTOCOL) } }]
            : []),
          ...actions,
          { txn: { appId: run.appId, version: run.version, lastUpdated: now } },
        ],
        {
          checkpointInterval: retention.checkpointInterval,
          tombstonesSinceMs: now - retention.deletedFileMs,
        },
      );
      if (version !== undefined) return;
    }
    throw new IntegrationError(
      'sink_failed',
      `Delta table ${table}: another writer took each of the next three versions; give each app its own delta location`,
    );
  }
}
