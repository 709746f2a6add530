/*
 * A Delta table's transaction log (https://github.com/delta-io/delta/blob/master/PROTOCOL.md): the actions this sink
 * writes, the table's state read back from the last checkpoint and the commits after it, and a commit written only
 * if its version is free.
 */
import { IntegrationError } from '../../errors';
import { readCheckpoint, writeCheckpoint } from './checkpoint';
import { apply, emptySnapshot, LOG, versionName, type Action, type Snapshot } from './actions';
import type { DeltaStore } from './store';

const commitPath = (table: string, v: number) => `${table}/${LOG}/${versionName(v)}.json`;

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
