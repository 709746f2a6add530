import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sortOut, rejectedError, type Change, type StreamCounts } from '../../changes';
import { IntegrationError } from '../../errors';
import { jsonPages } from '../../formats/lines';
import { ndjson, pageName } from '../ndjson';
import type { ChangeBatch, ChangeSink, RunManifest, WriteOutcome } from '../types';
import { dataFile, schemaString, type Columns } from './columns';
import { mergeCurrent } from './current';
import { PROTOCOL, type Action, type AddAction, type Snapshot } from './actions';
import { commit, readSnapshot } from './log';
import { appIdOf, ENGINE, runVersion } from './marks';
import type { DeltaOptions } from './options';
import { vacuum } from './retention';
import type { DeltaStore } from './store';

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
export type { DeltaOptions } from './options';

export class DeltaSink implements ChangeSink {
  readonly description: string;
  constructor(
    readonly store: DeltaStore,
    readonly options: DeltaOptions,
  ) {
    this.description = `Delta tables in ${store.description}`;
  }

  /** Where a run's pages of a stream wait for its commit: a hidden folder of the table, which readers skip. */
  private staging(stream: string, runId: string) {
    return `${stream}/_staging/${runId}`;
  }

  private staged(stream: string, runId: string, page: number) {
    return `${this.staging(stream, runId)}/${pageName(page)}.ndjson`;
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
        // Read from the store once: each table's pass reads the pages, the second from a copy in the scratch folder.
        const local = join(scratch, `page-${page}.ndjson`);
        let bytes: Buffer | undefined = await readFile(local).catch(() => undefined);
        if (!bytes) {
          bytes = await this.store.read(this.staged(stream, runId, page));
          if (bytes) await writeFile(local, bytes);
        }
        if (!bytes)
          throw new IntegrationError(
            'sink_failed',
            `Delta table ${stream}: page ${page} of run ${runId} is not in ${this.store.description}/${this.staging(stream, runId)} (removed while the run was in flight?); start the stream over with \`tenant-integrations sync --full\``,
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
          const merged = await mergeCurrent(
            {
              table: stream,
              store: this.store,
              options: this.options,
              put: (file, stats, tags) => this.put(stream, file, stats, tags),
              metaData: (columns, configuration, id) => this.metaData(stream, columns, configuration, id),
            },
            snapshot,
            pages,
            { counts, fields: options.fields, scratch },
          );
          for (const m of merged.misfits) quarantine.add(m);
          return merged.actions;
        });
      }
      // What was set aside, beside the table (a hidden folder: Delta readers skip it), for the operator to look at.
      if (quarantine.size)
        await this.store.put(`${stream}/_quarantine/${runId}.ndjson`, `${[...quarantine].join('\n')}\n`);
      await this.store.removeAll(this.staging(stream, runId));
      const now = this.options.clock.now();
      for (const table of [stream, `${stream}_changes`])
        await vacuum(this.store, table, now - this.options.retentionHours * 3_600_000);
      return { rejected: quarantine.size };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /** Nothing held open: its clients close with the process. */
  async close(): Promise<void> {}

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
    const { local, size, stats } = await dataFile(rows(), CHANGE_COLUMNS, join(scratch, 'changes.parquet'), [
      'change_id',
      'kind',
      'key',
      'run_id',
    ]);
    const actions: Action[] = [];
    if (snapshot.version < 0) actions.push({ metaData: this.metaData(table, CHANGE_COLUMNS, {}) });
    actions.push({ add: await this.put(table, { local, size }, stats.toJSON()) });
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
    file: { local: string; size: number },
    stats: string,
    tags?: Record<string, string>,
  ): Promise<AddAction> {
    const path = `part-${randomUUID()}.snappy.parquet`;
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
      dataChange: true,
      stats,
      ...(tags ? { tags } : {}),
    };
  }
}
