/*
 * Housekeeping of a table the sink owns, after each stream's end — and nothing else, anywhere:
 *
 * - data files: one of the sink's own (its names, its tag) that the latest version does not use is deleted once it has
 *   not been part of the table for the retention period (removed by a commit that long ago, or never committed and
 *   written that long ago), as VACUUM keeps it. Another engine's files, deletion vectors and folders are left to it.
 * - the log: commits and checkpoints before the newest checkpoint older than the log's retention, as Delta's metadata
 *   clean-up does, so that the log does not grow for ever; the checkpoint itself and everything after stay.
 * - a run's staging that was abandoned (the run killed and started over) once it is older than the retention.
 *
 * Retention is the table's own where its configuration sets it (`delta.deletedFileRetentionDuration`, the longer of it
 * and DELTA_RETENTION_HOURS; `delta.logRetentionDuration`, else Delta's 30 days; `delta.checkpointInterval`).
 */
import type { MetaDataAction } from './actions';
import { readSnapshot } from './log';
import { isOwnDataFile, isOwnFile, WRITER_TAG } from './names';
import { owns } from './ownership';
import type { DeltaStore } from './store';

const HOUR = 3_600_000;
/** Delta's default log retention (`delta.logRetentionDuration`): 30 days. */
const LOG_RETENTION_MS = 30 * 24 * HOUR;

const UNITS: Record<string, number> = {
  microsecond: 0.001,
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: HOUR,
  day: 24 * HOUR,
  week: 7 * 24 * HOUR,
};

/**
 * A Delta interval property (`interval 7 days`, `168 hours`, `interval 1 day 12 hours`) in milliseconds; undefined
 * when it is not one (months and years are not durations Delta takes for retention).
 */
export function intervalMs(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const parts = text
    .trim()
    .toLowerCase()
    .replace(/^interval\s+/, '')
    .split(/\s+/);
  if (!parts.length || parts.length % 2) return undefined;
  let ms = 0;
  for (let i = 0; i < parts.length; i += 2) {
    const n = Number(parts[i]);
    const unit = UNITS[parts[i + 1].replace(/s$/, '')];
    if (!Number.isFinite(n) || n < 0 || unit === undefined) return undefined;
    ms += n * unit;
  }
  return ms;
}

/** How long the table keeps what older versions need, and how often it is checkpointed. */
export function retentionOf(
  meta: MetaDataAction | undefined,
  settings: { retentionHours: number; checkpointInterval: number },
): { deletedFileMs: number; logMs: number; checkpointInterval: number } {
  const c = meta?.configuration ?? {};
  const own = c['delta.deletedFileRetentionDuration'];
  const table = intervalMs(own);
  const interval = Number(c['delta.checkpointInterval']);
  return {
    // A property this sink cannot read keeps everything (Infinity): nothing is deleted on a guess.
    deletedFileMs:
      own !== undefined && table === undefined
        ? Infinity
        : Math.max(settings.retentionHours * HOUR, table ?? 0),
    logMs:
      c['delta.logRetentionDuration'] === undefined
        ? LOG_RETENTION_MS
        : (intervalMs(c['delta.logRetentionDuration']) ?? Infinity),
    checkpointInterval: Number.isInteger(interval) && interval > 0 ? interval : settings.checkpointInterval,
  };
}

const COMMIT = /^_delta_log\/(\d{20})\.json$/;
const CHECKPOINT = /^_delta_log\/(\d{20})\.checkpoint\.parquet$/;
/** What metadata clean-up removes before the cut-off checkpoint: commits, checkpoints (any kind), checksums. */
const LOG_ENTRY = /^_delta_log\/(\d{20})\.(?:json|crc|checkpoint(?:\.[\w-]+)*\.parquet)$/;

export interface Housekept {
  dataFiles: number;
  logEntries: number;
  stagings: number;
}

/** Housekeeping of `table` as of `now`; a table the sink does not own is not touched (answers zeros). */
export async function housekeep(
  store: DeltaStore,
  table: string,
  options: {
    now: number;
    retentionHours: number;
    checkpointInterval: number;
    /** The stream's staging folder (`<stream>/_staging`), for the current table. */
    staging?: string;
    abortSignal?: AbortSignal;
  },
): Promise<Housekept> {
  const done: Housekept = { dataFiles: 0, logEntries: 0, stagings: 0 };
  const snapshot = await readSnapshot(store, table, options);
  if (!owns(snapshot)) return done;
  const retention = retentionOf(snapshot.metaData, options);
  const cutoff = options.now - retention.deletedFileMs;
  const stagings = new Map<string, number>();
  const commits: Array<{ version: number; modifiedMs: number }> = [];
  const checkpoints: number[] = [];
  const entries: Array<{ path: string; version: number }> = [];
  const doomed: string[] = [];
  for await (const file of store.list(table, options)) {
    const rel = file.path.slice(table.length + 1);
    const staged = /^_staging\/([^/]+)\//.exec(rel);
    if (staged) {
      stagings.set(staged[1], Math.max(stagings.get(staged[1]) ?? 0, file.modifiedMs));
      continue;
    }
    const entry = LOG_ENTRY.exec(rel);
    if (entry) {
      entries.push({ path: file.path, version: Number(entry[1]) });
      const commit = COMMIT.exec(rel);
      if (commit) commits.push({ version: Number(commit[1]), modifiedMs: file.modifiedMs });
      const checkpoint = CHECKPOINT.exec(rel);
      if (checkpoint) checkpoints.push(Number(checkpoint[1]));
      continue;
    }
    if (!isOwnFile(rel) || snapshot.files.has(rel)) continue;
    const removed = snapshot.tombstones.get(rel);
    if (isOwnDataFile(rel) && removed?.tags?.writer && removed.tags.writer !== WRITER_TAG.writer) continue;
    if ((removed ? removed.deletionTimestamp : file.modifiedMs) >= cutoff) continue;
    doomed.push(file.path);
  }
  for (const path of doomed) await store.remove(path, options);
  done.dataFiles = doomed.length;

  for (const [run, newest] of stagings)
    if (options.staging && newest < cutoff) {
      await store.removeAll(`${options.staging}/${run}`, options);
      done.stagings++;
    }

  // The log: everything before the newest checkpoint at or before the newest commit older than the log's retention.
  const logCutoff = options.now - retention.logMs;
  const old = commits.filter((c) => c.modifiedMs <= logCutoff).map((c) => c.version);
  const last = await store.read(`${table}/_delta_log/_last_checkpoint`, options).catch(() => undefined);
  const lastVersion = last
    ? Number((JSON.parse(last.toString('utf8')) as { version?: unknown }).version)
    : -1;
  if (old.length) {
    const cutoffCommit = Math.max(...old);
    const cut = Math.max(-1, ...checkpoints.filter((v) => v <= cutoffCommit && v <= lastVersion));
    if (cut > 0)
      for (const e of entries)
        if (e.version < cut) {
          await store.remove(e.path, options);
          done.logEntries++;
        }
  }
  return done;
}
