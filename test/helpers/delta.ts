import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { SYNC_NODE_FLAGS } from '../../shared/node-flags';

/** The Python that has delta-rs: .ci/venv's (`.ci/run` makes it for the conformance and fault suites), or DELTA_PYTHON. */
export const DELTA_PYTHON = process.env.DELTA_PYTHON ?? resolve(__dirname, '../../.ci/venv/bin/python');
const DELTA_RS = resolve(__dirname, 'read-delta.py');
/** The tests' own reader, in Node (`npm test` needs no Python): written from the protocol, no code of the sink's. */
const NODE_READER = resolve(__dirname, 'read-delta.mjs');

export interface DeltaRead {
  version: number;
  schema: Array<[string, string]>;
  rows: Array<Record<string, unknown>>;
  files: string[];
  history: Array<{ version: number; operation: string | null }>;
}

/** Who reads a table back: the tests' Node reader (`npm test`), or delta-rs (the conformance and fault suites). */
export type DeltaReader = 'node' | 'delta-rs';

const AZURITE_KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/**
 * A Delta table as a reader nobody here wrote the sink with reads it (in its own process): a folder, or
 * `az://CONTAINER/PATH` on the Azurite whose blob endpoint is `azuriteBlob` (http://127.0.0.1:PORT). `optimize`:
 * delta-rs compacts the table first, as another engine would.
 */
export function readDelta(
  uri: string,
  options: {
    version?: number;
    azuriteBlob?: string;
    /** delta-rs compacts the table first; `count`: it answers the rows' count, not the rows (a large table). */
    optimize?: boolean | 'count';
    reader?: DeltaReader;
  } = {},
): Promise<DeltaRead & { count?: number }> {
  const reader = options.reader ?? (options.optimize ? 'delta-rs' : 'node');
  if (reader === 'delta-rs' && !existsSync(DELTA_PYTHON))
    throw new Error(
      `no Python with deltalake at ${DELTA_PYTHON}: run .ci/run once (it makes .ci/venv), or set DELTA_PYTHON`,
    );
  const version =
    options.optimize === 'count'
      ? 'optimize-count'
      : options.optimize
        ? 'optimize'
        : options.version === undefined
          ? undefined
          : String(options.version);
  const [command, args] =
    reader === 'node'
      ? [process.execPath, [NODE_READER, uri, ...(version ? [version] : [])]]
      : [DELTA_PYTHON, [DELTA_RS, uri, version ?? 'latest']];
  return new Promise((done, fail) =>
    execFile(
      command,
      args,
      {
        env: {
          ...process.env,
          ...(options.azuriteBlob
            ? {
                AZURITE_BLOB_STORAGE_URL: options.azuriteBlob,
                AZURITE_CONNECTION_STRING: `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_KEY};BlobEndpoint=${options.azuriteBlob}/devstoreaccount1;`,
              }
            : {}),
        },
        maxBuffer: 256 * 1024 * 1024,
        timeout: 120_000,
      },
      (err, stdout, stderr) =>
        err ? fail(new Error(`${reader}: ${stderr || err.message}`)) : done(JSON.parse(stdout) as DeltaRead),
    ),
  );
}

/** A record's fields as the delta sink's current table holds them: objects and lists as JSON text. */
export const asRow = (record: unknown): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(record as Record<string, unknown>).map(([k, v]) => [
      k,
      v !== null && typeof v === 'object' ? JSON.stringify(v) : v,
    ]),
  );

const DRIVER = resolve(__dirname, 'delta-driver.mjs');

/**
 * Runs the delta sink in its own process (delta-driver.mjs, the built app) with the V8 flags a sync process runs with
 * (shared/node-flags.ts), so its peak is a sync's: its answer, or the error it failed with.
 */
export function driveDelta(
  command: Record<string, unknown>,
): Promise<{ ok: boolean; result?: unknown; error?: string; code?: string; peakRssMb: number }> {
  return new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      [...SYNC_NODE_FLAGS, DRIVER],
      { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err ? fail(new Error(`driver: ${stderr || err.message}`)) : done(JSON.parse(stdout)),
    );
    child.stdin?.end(JSON.stringify(command));
  });
}

/** A run id as the sync makes them: its start time, then a suffix. */
export const runAt = (iso: string) => `${iso.replace(/[:.]/g, '-')}-0000beef`;

/** Record `i` of the drivers' `items` stream. */
export const itemRecord = (i: number, extra: Record<string, unknown> = {}) => ({
  id: `r${String(i).padStart(4, '0')}`,
  title: `Record ${i}`,
  score: i / 2,
  done: i % 2 === 0,
  tags: ['a', String(i)],
  ...extra,
});

/** Changes of one kind to records `from`..`to` (exclusive), as the driver takes them. */
export const changesOf = (kind: string, from: number, to: number, extra: Record<string, unknown> = {}) =>
  Array.from({ length: to - from }, (_, j) => {
    const r = itemRecord(from + j, extra);
    return {
      kind,
      id: r.id,
      changeId: `${kind}-${r.id}-${JSON.stringify(extra)}`,
      record: kind === 'deleted' ? undefined : r,
    };
  });
