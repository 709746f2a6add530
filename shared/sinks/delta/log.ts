/*
 * A Delta table's transaction log (https://github.com/delta-io/delta/blob/master/PROTOCOL.md): the actions this sink
 * writes, the table's state read back from the last checkpoint and the commits after it, and a commit written only
 * if its version is free.
 */
import { IntegrationError } from '../../errors';
import { readCheckpoint, writeCheckpoint } from './checkpoint';
import type { DeltaStore } from './store';

/** Protocol 1 / 2: what every Delta reader (Spark, Fabric, Databricks, delta-rs) reads, no table features. */
export const PROTOCOL = { minReaderVersion: 1, minWriterVersion: 2 } as const;

export interface AddAction {
  path: string;
  partitionValues: Record<string, string>;
  size: number;
  modificationTime: number;
  dataChange: boolean;
  stats?: string;
  tags?: Record<string, string>;
}

export interface RemoveAction {
  path: string;
  deletionTimestamp: number;
  dataChange: boolean;
  extendedFileMetadata?: boolean;
  partitionValues?: Record<string, string>;
  size?: number;
  tags?: Record<string, string>;
}

export interface MetaDataAction {
  id: string;
  name?: string;
  description?: string;
  format: { provider: 'parquet'; options: Record<string, string> };
  schemaString: string;
  partitionColumns: string[];
  configuration: Record<string, string>;
  createdTime?: number;
}

export interface TxnAction {
  appId: string;
  version: number;
  lastUpdated?: number;
}

export type Action =
  | { protocol: { minReaderVersion: number; minWriterVersion: number } }
  | { metaData: MetaDataAction }
  | { add: AddAction }
  | { remove: RemoveAction }
  | { txn: TxnAction }
  | { commitInfo: Record<string, unknown> };

/** A table as of a version: its schema, its live files, the files removed (for retention) and each writer's mark. */
export interface Snapshot {
  /** -1: no table yet. */
  version: number;
  protocol?: { minReaderVersion: number; minWriterVersion: number };
  metaData?: MetaDataAction;
  files: Map<string, AddAction>;
  tombstones: Map<string, RemoveAction>;
  txns: Map<string, number>;
}

export const LOG = '_delta_log';
export const versionName = (v: number) => String(v).padStart(20, '0');
const commitPath = (table: string, v: number) => `${table}/${LOG}/${versionName(v)}.json`;

/** Applies one action to the state, as a reader replays the log. */
export function apply(state: Snapshot, action: Partial<Record<string, unknown>>): void {
  if (action.protocol) state.protocol = action.protocol as Snapshot['protocol'];
  if (action.metaData) state.metaData = action.metaData as MetaDataAction;
  if (action.txn) {
    const t = action.txn as TxnAction;
    state.txns.set(t.appId, Number(t.version));
  }
  if (action.add) {
    const a = action.add as AddAction;
    const path = decodeURIComponent(a.path);
    state.files.set(path, { ...a, path });
    state.tombstones.delete(path);
  }
  if (action.remove) {
    const r = action.remove as RemoveAction;
    const path = decodeURIComponent(r.path);
    state.files.delete(path);
    state.tombstones.set(path, { ...r, path });
  }
}

export const emptySnapshot = (): Snapshot => ({
  version: -1,
  files: new Map(),
  tombstones: new Map(),
  txns: new Map(),
});

/**
 * The table's latest state: the checkpoint `_last_checkpoint` names (when there is one), then each commit after it
 * until a version is missing. A commit that is not JSON fails the read — a table is never guessed at.
 */
export async function readSnapshot(
  store: DeltaStore,
  table: string,
  options: { abortSignal?: AbortSignal } = {},
): Promise<Snapshot> {
  const state = emptySnapshot();
  const last = await store.read(`${table}/${LOG}/_last_checkpoint`, options);
  if (last) {
    const { version, parts } = JSON.parse(last.toString('utf8')) as { version: number; parts?: number };
    const bytes = parts
      ? undefined
      : await store.read(`${table}/${LOG}/${versionName(version)}.checkpoint.parquet`, options);
    // A checkpoint in parts, or a V2 one, is another engine's; and its commits before it may be gone. Reading the
    // log from the start then could take a table for empty and write over it: refused instead.
    if (!bytes)
      throw new IntegrationError(
        'sink_failed',
        `Delta table ${table}: its checkpoint at version ${version} is not a single-file checkpoint this sink reads (written by another engine?); give the delta sink a location of its own`,
      );
    for (const action of await readCheckpoint(bytes)) apply(state, action);
    state.version = version;
  }
  for (let v = state.version + 1; ; v++) {
    const bytes = await store.read(commitPath(table, v), options);
    if (!bytes) break;
    for (const line of bytes.toString('utf8').split('\n'))
      if (line.trim()) apply(state, JSON.parse(line) as Record<string, unknown>);
    state.version = v;
  }
  return state;
}

/**
 * Writes `actions` as version `snapshot.version + 1`, only if no other writer wrote it. Answers false when one did:
 * the caller reads the table again and decides afresh (its `txn` may be there already).
 */
export async function commit(
  store: DeltaStore,
  table: string,
  snapshot: Snapshot,
  actions: Action[],
  /** `tombstonesSinceMs`: files removed before it are past retention, and a checkpoint no longer lists them. */
  options: { abortSignal?: AbortSignal; checkpointInterval: number; tombstonesSinceMs?: number },
): Promise<number | undefined> {
  const version = snapshot.version + 1;
  const body = `${actions.map((a) => JSON.stringify(a)).join('\n')}\n`;
  if (!(await store.createIfAbsent(commitPath(table, version), body, options))) return undefined;
  // A checkpoint every `checkpointInterval` versions, so a reader replays at most that many commits. It is only a
  // faster way to read what the commits say: one that fails to be written leaves the table whole.
  if ((version + 1) % options.checkpointInterval === 0) {
    const state: Snapshot = {
      ...snapshot,
      files: new Map(snapshot.files),
      tombstones: new Map(snapshot.tombstones),
      txns: new Map(snapshot.txns),
    };
    for (const a of actions) apply(state, a as Record<string, unknown>);
    state.version = version;
    for (const [path, r] of state.tombstones)
      if (r.deletionTimestamp < (options.tombstonesSinceMs ?? -Infinity)) state.tombstones.delete(path);
    await writeCheckpoint(store, table, state, options);
  }
  return version;
}
