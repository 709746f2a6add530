/*
 * The Delta log's vocabulary: the actions this sink writes and reads, and a table's state as replaying them makes it.
 */
import { vectorId, type DeletionVector } from './deletion-vectors';

export interface Protocol {
  minReaderVersion: number;
  minWriterVersion: number;
  readerFeatures?: string[];
  writerFeatures?: string[];
}

/** Protocol 1 / 2: what every Delta reader reads, no table features (DELTA_DELETION_VECTORS=false). */
export const PLAIN_PROTOCOL: Protocol = { minReaderVersion: 1, minWriterVersion: 2 };
/** Reader 3 / writer 7 with deletion vectors, and nothing else: Spark 3.4+, Fabric, Databricks, delta-rs' kernel. */
export const DV_PROTOCOL: Protocol = {
  minReaderVersion: 3,
  minWriterVersion: 7,
  readerFeatures: ['deletionVectors'],
  writerFeatures: ['deletionVectors'],
};

/**
 * Why this sink cannot write a table of this protocol and metadata, or undefined. It writes protocol 1 / 2 and
 * 3 / 7 with deletion vectors; the legacy features a writer 2 table implies (and Spark lists when it moves a table to
 * table features), `appendOnly` and `invariants`, only while they are not in force.
 */
export function unwritable(p: Protocol | undefined, meta?: MetaDataAction): string | undefined {
  if (!p) return undefined;
  if (meta?.configuration['delta.appendOnly'] === 'true') return 'it is append-only (delta.appendOnly)';
  if (meta?.schemaString.includes('delta.invariants')) return 'a column has an invariant (delta.invariants)';
  const readerOk = p.minReaderVersion === 1 || p.minReaderVersion === 3;
  const writerOk = p.minWriterVersion <= 2 || p.minWriterVersion === 7;
  if (!readerOk || !writerOk) return `it needs reader ${p.minReaderVersion} / writer ${p.minWriterVersion}`;
  const known = new Set(['deletionVectors', 'appendOnly', 'invariants']);
  const features = [
    ...(p.minReaderVersion === 3 ? (p.readerFeatures ?? []) : []),
    ...(p.minWriterVersion === 7 ? (p.writerFeatures ?? []) : []),
  ];
  const unknown = [...new Set(features.filter((f) => !known.has(f)))];
  return unknown.length ? `it uses the table features ${unknown.join(', ')}` : undefined;
}

/** Whether the table's files may carry deletion vectors (its readers read them). */
export const hasDeletionVectors = (p: Protocol | undefined) =>
  Boolean(p && p.minReaderVersion === 3 && p.readerFeatures?.includes('deletionVectors'));

export interface AddAction {
  path: string;
  partitionValues: Record<string, string>;
  size: number;
  modificationTime: number;
  dataChange: boolean;
  stats?: string;
  tags?: Record<string, string>;
  deletionVector?: DeletionVector;
}

export interface RemoveAction {
  path: string;
  deletionTimestamp: number;
  dataChange: boolean;
  extendedFileMetadata?: boolean;
  partitionValues?: Record<string, string>;
  size?: number;
  tags?: Record<string, string>;
  deletionVector?: DeletionVector;
  stats?: string;
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
  | { protocol: Protocol }
  | { metaData: MetaDataAction }
  | { add: AddAction }
  | { remove: RemoveAction }
  | { txn: TxnAction }
  | { commitInfo: Record<string, unknown> };

/** A table as of a version: its schema, its live files, the files removed (for retention) and each writer's mark. */
export interface Snapshot {
  /** -1: no table yet. */
  version: number;
  protocol?: Protocol;
  metaData?: MetaDataAction;
  files: Map<string, AddAction>;
  tombstones: Map<string, RemoveAction>;
  txns: Map<string, number>;
}

export const LOG = '_delta_log';
export const versionName = (v: number) => String(v).padStart(20, '0');

/** An action's fields without the nulls a checkpoint's columns hold for what the action does not have. */
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;

/**
 * Applies one action to the state, as a reader replays the log. A file is its path and its deletion vector (PROTOCOL.md,
 * "Action Reconciliation"): a commit that gives a file a new vector holds an `add` of the new and a `remove` of the old,
 * in either order (Spark writes the `add` first), and the `remove` must not take the new one away.
 */
export function apply(state: Snapshot, action: Partial<Record<string, unknown>>): void {
  if (action.protocol) state.protocol = action.protocol as Snapshot['protocol'];
  if (action.metaData) state.metaData = action.metaData as MetaDataAction;
  if (action.txn) {
    const t = action.txn as TxnAction;
    state.txns.set(t.appId, Number(t.version));
  }
  if (action.add) {
    const a = defined(action.add as AddAction);
    const path = decodeURIComponent(a.path);
    state.files.set(path, { ...a, path });
    state.tombstones.delete(path);
  }
  if (action.remove) {
    const r = defined(action.remove as RemoveAction);
    const path = decodeURIComponent(r.path);
    const live = state.files.get(path);
    if (live && vectorId(live.deletionVector) !== vectorId(r.deletionVector)) return; // another logical file
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
