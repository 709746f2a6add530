/*
 * The names the delta sink gives what it writes — its tables, data files, staged pages, leftovers — and how it knows
 * its own again: retention deletes only what matches these, and ownership takes nothing else for the sink's.
 */
import { randomUUID } from 'node:crypto';

/** A stream's two tables: its current records, and every change. */
export const tablesOf = (stream: string) => ({ current: stream, changes: `${stream}_changes` });

/** The writer's tag on every data file it adds (with its name, how retention knows the file for the sink's). */
export const WRITER_TAG = { writer: 'tenant-integrations' } as const;

/** A data file's name: the app's, a fresh UUID (Delta's data files are never overwritten), Snappy-compressed Parquet. */
export const dataFileName = () => `tenant-integrations-${randomUUID()}.snappy.parquet`;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Data files at the table's root: this release's names, and the first release's (`part-<uuid>.snappy.parquet`). */
const DATA_FILE = new RegExp(`^(?:tenant-integrations-|part-)${UUID}\\.snappy\\.parquet$`);
/** A folder store's half-made file: `<name>.<uuid>.tmp` beside it (a write cut short before its rename or link). */
const TMP_FILE = new RegExp(`^(?:_delta_log/)?[^/]+\\.${UUID}\\.tmp$`);

/** A data file this sink wrote (by name: Spark, delta-rs and Fabric name theirs `part-00000-<uuid>-c000…`). */
export const isOwnDataFile = (path: string) => DATA_FILE.test(path);

/** Anything under a table this sink wrote and may remove when it is no longer needed (data files, half-made files). */
export const isOwnFile = (path: string) => DATA_FILE.test(path) || TMP_FILE.test(path);

/** A run's staged pages: `_staging/<runId>/<page>.ndjson` under the stream's current table. */
export const stagingOf = (stream: string, runId: string) => `${stream}/_staging/${runId}`;
const STAGED = /^_staging\/[\w.-]+\/\d{8}\.ndjson$/;
export const isStagedFile = (path: string) => STAGED.test(path);

/** Records set aside in a run (SYNC_REJECTED_RECORDS=quarantine), beside the current table. */
export const quarantineOf = (stream: string, runId: string) => `${stream}/_quarantine/${runId}.ndjson`;
