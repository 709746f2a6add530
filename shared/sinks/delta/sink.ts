import { randomUUID } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sortOut, rejectedError, type Change, type RejectedPolicy, type StreamCounts } from '../../changes';
import type { Clock } from '../../clock';
import { IntegrationError } from '../../errors';
import { ColumnLearner } from '../../formats/parquet';
import { jsonPages } from '../../formats/lines';
import { ndjson, pageName } from '../ndjson';
import type { ChangeBatch, ChangeSink, RunManifest, WriteOutcome } from '../types';
import {
  columnsOf,
  dataFile,
  deltaTypeOf,
  KEY_COLUMN,
  readDataFile,
  rowOf,
  schemaString,
  type Columns,
} from './columns';
import { commit, PROTOCOL, readSnapshot, type Action, type AddAction, type Snapshot } from './log';
import { vacuum } from './retention';
import { appIdOf, bucketOf, ENGINE, runVersion } from './marks';
import type { DeltaStore } from './store';

export interface DeltaOptions {
  schemaChanges: 'report' | 'propagate';
  rejected: RejectedPolicy;
  retentionHours: number;
  checkpointInterval: number;
  /** About this many rows a data file of the current table, when the table is made (DELTA_ROWS_PER_FILE). */
  rowsPerFile?: number;
  clock: Clock;
}

/** Where the current table's layout is kept: how many buckets its keys are spread over (fixed when it is made). */
export const BUCKETS = 'tenantIntegrations.buckets';
/** About this many rows a data file of the current table, when the table is made (the default). */
export const ROWS_PER_FILE = 10_000;
const MAX_BUCKETS = 256;

const CHANGE_COLUMNS: Columns = [
  ['change_id', 'string'],
  ['kind', 'string'],
  ['key', 'string'],
  ['record', 'string'],
  ['run_id', 'string'],
];

/**
 * `delta`: per stream, a table of the current records (`<stream>`, one row per key) and a table of every change
 * (`<stream>_changes`, appended). Pages are staged under the table's hidden `_staging/` folder; when the stream's pass
 * ends both tables are committed, each once per run: its `txn` carries the run's mark, and a table whose mark is
 * already there (a run resumed after a crash, a step delivered twice) is not written again.
 */
export class DeltaSink implements ChangeSink {
  readonly description: string;
  constructor(
    readonly store: DeltaStore,
    readonly options: DeltaOptions,
  ) {
    this.description = `Delta tables in ${store.description}`;
  }

  private staged(stream: string, runId: string, page: number) {
    return `${stream}/_staging/${runId}/${pageName(page)}.ndjson`;
  }

  async write(batch: ChangeBatch, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    await this.store.put(this.staged(batch.stream, batch.runId, batch.page), ndjson(batch.changes), options);
  }

  async endStream(
    tenant: string,
    runId: string,
    stream: string,
    changedPages: number[],
    counts?: StreamCounts,
    options: { fields?: readonly string[] } = {},
  ): Promise<WriteOutcome | void> {
    const mark = runVersion(runId);
    const scratch = await mkdtemp(join(tmpdir(), 'ti-delta-'));
    const quarantine = new Set<string>();
    const pages = async function* (this: DeltaSink) {
      for (const page of changedPages) {
        const bytes = await this.store.read(this.staged(stream, runId, page));
        if (!bytes)
          throw new IntegrationError(
            'sink_failed',
            `Delta table ${stream}: page ${page} of run ${runId} is not in ${this.store.description}/${stream}/_staging (removed while the run was in flight?); start the stream over with \`tenant-integrations sync --full\``,
          );
        for await (const changes of jsonPages<Change>(
          bytes.toString('utf8').split('\n'),
          Number.MAX_SAFE_INTEGER,
        )) {
          const { kept, rejected } = sortOut(changes, 'parquet');
          if (rejected.length) {
            if (this.options.rejected !== 'quarantine')
              throw rejectedError('Delta', stream, rejected[0], rejected.length - 1);
            for (const r of rejected)
              quarantine.add(JSON.stringify({ id: r.id, reason: r.reason, record: r.json }));
          }
          yield kept;
        }
      }
    }.bind(this);
    try {
      if (changedPages.length) {
        await this.commitTable(`${stream}_changes`, appIdOf(tenant), mark, runId, 'WRITE', (snapshot) =>
          this.changesFile(`${stream}_changes`, snapshot, pages, runId, scratch),
        );
        await this.commitTable(stream, appIdOf(tenant), mark, runId, 'MERGE', async (snapshot) => {
          const merged = await this.merge(stream, snapshot, pages, counts, options.fields, scratch);
          for (const m of merged.misfits) quarantine.add(m);
          return merged.actions;
        });
      }
      // What was set aside, beside the table (a hidden folder: Delta readers skip it), for the operator to look at.
      if (quarantine.size)
        await this.store.put(`${stream}/_quarantine/${runId}.ndjson`, `${[...quarantine].join('\n')}\n`);
      await this.store.removeAll(`${stream}/_staging/${runId}`);
      const now = this.options.clock.now();
      for (const table of [stream, `${stream}_changes`])
        await vacuum(this.store, table, now - this.options.retentionHours * 3_600_000);
      return { rejected: quarantine.size };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  async finish(_manifest: RunManifest): Promise<void> {
    // Each table was committed when its stream's pass ended; the run's manifest is the run history's.
  }

  /**
   * Commits what `build` makes as the table's next version, with the run's mark — unless the mark is there already.
   * Another writer taking the version first: the table is read again and the commit made afresh (three times).
   */
  private async commitTable(
    table: string,
    appId: string,
    mark: number,
    runId: string,
    operation: string,
    build: (snapshot: Snapshot) => Promise<Action[]>,
  ): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const snapshot = await readSnapshot(this.store, table);
      if ((snapshot.txns.get(appId) ?? -1) >= mark) return; // this run's commit is there
      if (
        snapshot.protocol &&
        (snapshot.protocol.minReaderVersion > PROTOCOL.minReaderVersion ||
          snapshot.protocol.minWriterVersion > PROTOCOL.minWriterVersion)
      )
        throw new IntegrationError(
          'sink_failed',
          `Delta table ${table} needs a reader ${snapshot.protocol.minReaderVersion} / writer ${snapshot.protocol.minWriterVersion} (table features this sink does not write); give the delta sink a location of its own`,
        );
      const actions = await build(snapshot);
      const now = this.options.clock.now();
      const version = await commit(
        this.store,
        table,
        snapshot,
        [
          { commitInfo: { timestamp: now, operation, operationParameters: { runId }, engineInfo: ENGINE } },
          ...(snapshot.version < 0 ? [{ protocol: { ...PROTOCOL } }] : []),
          ...actions,
          { txn: { appId, version: mark, lastUpdated: now } },
        ],
        {
          checkpointInterval: this.options.checkpointInterval,
          tombstonesSinceMs: now - this.options.retentionHours * 3_600_000,
        },
      );
      if (version !== undefined) return;
    }
    throw new IntegrationError(
      'sink_failed',
      `Delta table ${table}: another writer took each of the next three versions; give each app its own delta location`,
    );
  }

  /** The changes table's new file: every change of the pass, in order. */
  private async changesFile(
    table: string,
    snapshot: Snapshot,
    pages: () => AsyncIterable<Change[]>,
    runId: string,
    scratch: string,
  ): Promise<Action[]> {
    const rows = async function* () {
      for await (const changes of pages())
        yield changes.map((c) => ({
          change_id: c.changeId,
          kind: c.kind,
          key: c.id,
          record: c.kind === 'deleted' ? null : JSON.stringify(c.record ?? null),
          run_id: runId,
        }));
    };
    const { bytes, stats } = await dataFile(rows(), CHANGE_COLUMNS, join(scratch, 'changes.parquet'), [
      'change_id',
      'kind',
      'key',
      'run_id',
    ]);
    const actions: Action[] = [];
    if (snapshot.version < 0) actions.push({ metaData: this.metaData(table, CHANGE_COLUMNS, {}) });
    actions.push({ add: await this.put(table, bytes, stats.toJSON()) });
    return actions;
  }

  private metaData(table: string, columns: Columns, configuration: Record<string, string>, id?: string) {
    return {
      id: id ?? randomUUID(),
      name: table,
      format: { provider: 'parquet' as const, options: {} },
      schemaString: schemaString(columns),
      partitionColumns: [],
      configuration: {
        'delta.deletedFileRetentionDuration': `interval ${this.options.retentionHours} hours`,
        ...configuration,
      },
      createdTime: this.options.clock.now(),
    };
  }

  /** A data file stored under a fresh name, and the `add` that names it. */
  private async put(
    table: string,
    bytes: Buffer,
    stats: string,
    tags?: Record<string, string>,
  ): Promise<AddAction> {
    const path = `part-${randomUUID()}.snappy.parquet`;
    await this.store.put(`${table}/${path}`, bytes);
    return {
      path,
      partitionValues: {},
      size: bytes.length,
      modificationTime: this.options.clock.now(),
      dataChange: true,
      stats,
      ...(tags ? { tags } : {}),
    };
  }

  /**
   * The current table's commit: the pass's changes spread over the table's buckets (a scratch file each), then each
   * touched bucket's files read, the changes applied in order, and one file written in their place.
   */
  private async merge(
    table: string,
    snapshot: Snapshot,
    pages: () => AsyncIterable<Change[]>,
    counts: StreamCounts | undefined,
    fields: readonly string[] | undefined,
    scratch: string,
  ): Promise<{ actions: Action[]; misfits: string[] }> {
    // The key column first, then the record's fields (`columns`).
    const existing = snapshot.metaData
      ? columnsOf(snapshot.metaData.schemaString).filter(([n]) => n !== KEY_COLUMN)
      : undefined;
    const buckets = snapshot.metaData
      ? Number(snapshot.metaData.configuration[BUCKETS] ?? 1) || 1
      : Math.min(
          MAX_BUCKETS,
          2 **
            Math.ceil(
              Math.log2(
                Math.max(1, Math.ceil((counts?.created ?? 0) / (this.options.rowsPerFile ?? ROWS_PER_FILE))),
              ),
            ),
        );
    const learner = new ColumnLearner([KEY_COLUMN], fields);
    const touched = new Map<number, string>();
    const pending = new Map<number, string[]>();
    const spill = async (bucket: number) => {
      const lines = pending.get(bucket);
      if (!lines?.length) return;
      const file = touched.get(bucket) ?? join(scratch, `bucket-${bucket}.ndjson`);
      touched.set(bucket, file);
      await appendFile(file, `${lines.join('\n')}\n`);
      pending.set(bucket, []);
    };
    for await (const changes of pages())
      for (const c of changes) {
        if (c.kind !== 'deleted') learner.add(c.record);
        const b = bucketOf(c.id, buckets);
        if (!touched.has(b)) touched.set(b, join(scratch, `bucket-${b}.ndjson`));
        const lines = pending.get(b) ?? [];
        lines.push(JSON.stringify(c));
        pending.set(b, lines);
        if (lines.length >= 1_000) await spill(b);
      }
    for (const b of [...pending.keys()]) await spill(b);

    // The table's columns: as it is made, every field the stream selects (in its order); after, a field added to the
    // selection becomes a column under SYNC_SCHEMA_CHANGES=propagate, and a column whose field went stays.
    const learnt = learner.columns();
    const wanted = fields ?? [...learnt.keys()];
    let columns: Columns =
      existing ?? wanted.filter((f) => f !== KEY_COLUMN).map((f) => [f, deltaTypeOf(learnt.get(f))]);
    let schemaChanged = !existing;
    if (existing && this.options.schemaChanges === 'propagate') {
      const added = wanted.filter((f) => f !== KEY_COLUMN && !existing.some(([n]) => n === f));
      if (added.length) {
        columns = [
          ...existing,
          ...added.map((f): [string, ReturnType<typeof deltaTypeOf>] => [f, deltaTypeOf(learnt.get(f))]),
        ];
        schemaChanged = true;
      }
    }

    const actions: Action[] = [];
    if (schemaChanged)
      actions.push({
        metaData: this.metaData(
          table,
          [[KEY_COLUMN, 'string'], ...columns],
          { ...(snapshot.metaData?.configuration ?? {}), [BUCKETS]: String(buckets) },
          snapshot.metaData?.id,
        ),
      });
    const misfits: string[] = [];
    const byBucket = new Map<number, AddAction[]>();
    for (const add of snapshot.files.values()) {
      const b = Number(add.tags?.bucket ?? -1);
      byBucket.set(b, [...(byBucket.get(b) ?? []), add]);
    }
    const now = this.options.clock.now();
    for (const [bucket, file] of [...touched].sort((a, b) => a[0] - b[0])) {
      const rows = new Map<string, Record<string, unknown>>();
      const old = byBucket.get(bucket) ?? [];
      for (const add of old) {
        const bytes = await this.store.read(`${table}/${add.path}`);
        if (!bytes)
          throw new IntegrationError(
            'sink_failed',
            `Delta table ${table}: its log names ${add.path}, which is not in ${this.store.description} (removed by hand?); start the stream over with \`tenant-integrations sync --full\` into an empty location`,
          );
        for (const row of await readDataFile(bytes)) rows.set(String(row[KEY_COLUMN]), row);
      }
      for (const line of (await readFile(file, 'utf8')).split('\n')) {
        if (!line) continue;
        const c = JSON.parse(line) as Change;
        if (c.kind === 'deleted') {
          rows.delete(c.id);
          continue;
        }
        const made = rowOf(c.id, c.record, columns);
        if ('misfit' in made) {
          if (this.options.rejected !== 'quarantine')
            throw rejectedError(
              'Delta',
              table,
              { id: c.id, reason: made.misfit, json: JSON.stringify(c.record) },
              0,
            );
          misfits.push(JSON.stringify({ id: c.id, reason: made.misfit, record: c.record }));
          continue;
        }
        rows.set(c.id, made.row);
      }
      for (const add of old)
        actions.push({
          remove: {
            path: add.path,
            deletionTimestamp: now,
            dataChange: true,
            extendedFileMetadata: true,
            partitionValues: {},
            size: add.size,
            ...(add.tags ? { tags: add.tags } : {}),
          },
        });
      if (rows.size) {
        const { bytes, stats } = await dataFile(
          [[...rows.values()]],
          [[KEY_COLUMN, 'string'], ...columns],
          join(scratch, `bucket-${bucket}.parquet`),
        );
        actions.push({ add: await this.put(table, bytes, stats.toJSON(), { bucket: String(bucket) }) });
      }
    }
    return { actions, misfits };
  }
}
