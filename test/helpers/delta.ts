import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** The Python that has delta-rs: .ci/venv's (`.ci/run` makes it), or DELTA_PYTHON. */
export const DELTA_PYTHON = process.env.DELTA_PYTHON ?? resolve(__dirname, '../../.ci/venv/bin/python');
const READER = resolve(__dirname, 'read-delta.py');

export interface DeltaRead {
  version: number;
  schema: Array<[string, string]>;
  rows: Array<Record<string, unknown>>;
  files: string[];
  history: Array<{ version: number; operation: string }>;
}

/**
 * A Delta table as delta-rs reads it (in its own process): a folder, or `az://CONTAINER/PATH` on the Azurite whose
 * blob endpoint is `azuriteBlob` (http://127.0.0.1:PORT).
 */
export function readDelta(
  uri: string,
  options: { version?: number; azuriteBlob?: string; optimize?: boolean } = {},
): Promise<DeltaRead> {
  if (!existsSync(DELTA_PYTHON))
    throw new Error(
      `no Python with deltalake at ${DELTA_PYTHON}: run .ci/run once (it makes .ci/venv), or set DELTA_PYTHON`,
    );
  return new Promise((done, fail) =>
    execFile(
      DELTA_PYTHON,
      [
        READER,
        uri,
        options.optimize ? 'optimize' : options.version === undefined ? 'latest' : String(options.version),
      ],
      {
        env: {
          ...process.env,
          ...(options.azuriteBlob ? { AZURITE_BLOB_STORAGE_URL: options.azuriteBlob } : {}),
        },
        maxBuffer: 256 * 1024 * 1024,
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        err ? fail(new Error(`delta-rs: ${stderr || err.message}`)) : done(JSON.parse(stdout) as DeltaRead),
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

/** Runs the delta sink in its own process (delta-driver.mjs, the built app): its answer, or the error it failed with. */
export function driveDelta(
  command: Record<string, unknown>,
): Promise<{ ok: boolean; result?: unknown; error?: string }> {
  return new Promise((done, fail) => {
    const child = execFile(
      process.execPath,
      [DRIVER],
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
