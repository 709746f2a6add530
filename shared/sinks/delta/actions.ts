/*
 * The Delta log's vocabulary: the actions this sink writes and reads, and a table's state as replaying them makes it.
 */

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
