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
