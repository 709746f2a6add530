import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { z } from 'zod';
import type { AppConfig } from '../config';
import { IntegrationError, SecretNotFound } from '../errors';
import { azureCredential } from '../secrets/credential';
import { recordJsonOf, type Change } from '../sync/changes';
import type { ChangeBatch, ChangeSink, RunManifest, SinkModule } from './types';

/**
 * `postgres`: one table per stream in a schema of its own (default `tenant_<tenant>`), each record as `jsonb` with
 * its id as primary key, its content hash, when and by which run it was written (and `deleted_at` with soft
 * deletes). Exactly once: a page's upserts and deletes and the sink's own checkpoint row (run, stream, page,
 * digest of its change ids) commit in one transaction, so a page delivered again after a crash is recognised and
 * not applied twice — and one whose content changed meanwhile is applied, so the table converges on the source.
 * One round trip per page: rows go in as arrays (`unnest`), not one statement per record.
 *
 * Typed columns per field are left to the reader (a view or generated column over `record`): the tenant's
 * schema can change without this table's having to, and no field is ever lost to a type it did not fit.
 */
export interface PostgresSinkOptions {
  /** The schema the tables live in; created when missing. */
  schema: string;
  /** Deletes set `deleted_at` instead of removing the row. */
  softDelete?: boolean;
}

export const SINK_PAGES_TABLE = '_sync_pages';
export const SINK_RUNS_TABLE = '_sync_runs';

/** A schema name from the tenant's: lower case, letters, digits and underscores. */
export const defaultSchema = (tenant: string) =>
  `tenant_${tenant.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

export class PostgresSink implements ChangeSink {
  readonly description: string;
  private readonly ready = new Map<string, Promise<void>>();

  constructor(
    private readonly pool: () => Pool,
    readonly options: PostgresSinkOptions,
  ) {
    this.description = `PostgreSQL schema ${options.schema}`;
  }

  private table(stream: string) {
    return `${ident(this.options.schema)}.${ident(stream)}`;
  }

  /** The schema, the checkpoint tables and the stream's table, once per process (retried after a failure). */
  private ensure(client: PoolClient, stream: string): Promise<void> {
    let ready = this.ready.get(stream);
    if (!ready) {
      const s = ident(this.options.schema);
      // Streams are written in parallel: an advisory lock makes their `IF NOT EXISTS` DDL take turns, which
      // PostgreSQL's catalog does not do by itself (two at once fail with a duplicate key).
      ready = client
        .query(
          `BEGIN;
           SELECT pg_advisory_xact_lock(hashtext(${literal(this.options.schema)}));
           CREATE SCHEMA IF NOT EXISTS ${s};
           CREATE TABLE IF NOT EXISTS ${s}.${ident(SINK_PAGES_TABLE)} (run_id text NOT NULL, stream text NOT NULL, page integer NOT NULL,
             change_digest text NOT NULL, changes integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
             PRIMARY KEY (run_id, stream, page));
           CREATE TABLE IF NOT EXISTS ${s}.${ident(SINK_RUNS_TABLE)} (run_id text PRIMARY KEY, ok boolean NOT NULL,
             manifest jsonb NOT NULL, finished_at timestamptz NOT NULL);
           CREATE TABLE IF NOT EXISTS ${this.table(stream)} (id text PRIMARY KEY, record jsonb NOT NULL,
             content_hash text NOT NULL, synced_at timestamptz NOT NULL, run_id text NOT NULL, deleted_at timestamptz);
           COMMIT;`,
        )
        .then(
          () => undefined,
          async (err: unknown) => {
            await client.query('ROLLBACK').catch(() => undefined);
            this.ready.delete(stream);
            throw err;
          },
        );
      this.ready.set(stream, ready);
    }
    return ready;
  }

  async write(batch: ChangeBatch): Promise<void> {
    // The last change of a record in a page wins (a page never lists a record twice, but be exact).
    const byId = new Map<string, Change>();
    for (const c of batch.changes) byId.set(c.id, c);
    const changes = [...byId.values()];
    const digest = createHash('sha256')
      .update(changes.map((c) => c.changeId).join('\n'))
      .digest('hex');
    const upserts = changes.filter((c) => c.kind !== 'deleted');
    const deletes = changes.filter((c) => c.kind === 'deleted').map((c) => c.id);
    const t = this.table(batch.stream);
    const pages = `${ident(this.options.schema)}.${ident(SINK_PAGES_TABLE)}`;
    const client = await this.pool().connect();
    try {
      await this.ensure(client, batch.stream);
      // One statement, so one round trip and one transaction: the page's checkpoint row decides whether it was
      // applied already (same change ids: skip); otherwise its upserts, its deletes and the row commit together.
      await client.query({
        // Prepared once per connection and stream: the plan of this statement is most of a small page's cost.
        name: `ti-page-${this.options.schema}-${batch.stream}-${this.options.softDelete ? 's' : 'h'}`.slice(
          0,
          63,
        ),
        text: `WITH go AS (
           SELECT NOT EXISTS (SELECT 1 FROM ${pages} WHERE run_id = $1 AND stream = $2 AND page = $3 AND change_digest = $4) AS apply
         ), up AS (
           INSERT INTO ${t} (id, record, content_hash, synced_at, run_id, deleted_at)
           SELECT u.id, u.record::jsonb, u.hash, now(), $1, NULL
             FROM go, unnest($5::text[], $6::text[], $7::text[]) AS u(id, record, hash) WHERE go.apply
           ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, content_hash = EXCLUDED.content_hash,
             synced_at = EXCLUDED.synced_at, run_id = EXCLUDED.run_id, deleted_at = NULL
         ), del AS (
           ${
             this.options.softDelete
               ? `UPDATE ${t} SET deleted_at = now(), run_id = $1 FROM go WHERE go.apply AND ${t}.id = ANY($8::text[]) AND ${t}.deleted_at IS NULL`
               : `DELETE FROM ${t} USING go WHERE go.apply AND ${t}.id = ANY($8::text[])`
           }
         ), cp AS (
           INSERT INTO ${pages} (run_id, stream, page, change_digest, changes)
           SELECT $1, $2, $3, $4, $9 FROM go WHERE go.apply
           ON CONFLICT (run_id, stream, page) DO UPDATE SET change_digest = EXCLUDED.change_digest,
             changes = EXCLUDED.changes, applied_at = now()
         )
         SELECT (SELECT apply FROM go) AS applied`,
        values: [
          batch.runId,
          batch.stream,
          batch.page,
          digest,
          upserts.map((c) => c.id),
          upserts.map(recordJsonOf),
          upserts.map((c) => c.changeId),
          deletes,
          changes.length,
        ],
      });
    } catch (err) {
      throw refused(err, batch.stream, changes);
    } finally {
      client.release();
    }
  }

  async endStream(): Promise<void> {}

  async finish(manifest: RunManifest): Promise<void> {
    const client = await this.pool().connect();
    try {
      // A run with no stream written still records itself: its streams' tables and the run table exist then.
      for (const stream of Object.keys(manifest.streams)) await this.ensure(client, stream);
      await client.query(
        `INSERT INTO ${ident(this.options.schema)}.${ident(SINK_RUNS_TABLE)} (run_id, ok, manifest, finished_at) VALUES ($1, $2, $3::jsonb, $4)
         ON CONFLICT (run_id) DO UPDATE SET ok = EXCLUDED.ok, manifest = EXCLUDED.manifest, finished_at = EXCLUDED.finished_at`,
        [manifest.runId, manifest.ok, JSON.stringify(manifest), manifest.finishedAt],
      );
    } finally {
      client.release();
    }
  }
}

/** PostgreSQL refused the page: name the stream and, where one record is the cause, that record. */
function refused(err: unknown, stream: string, changes: Change[]): Error {
  const e = err as { code?: string; message?: string };
  if (!e.code || !/^2[2-3]/.test(e.code)) return err as Error; // not the data's fault: connection, permissions, …
  // Text PostgreSQL cannot store (a NUL character) is the usual culprit.
  const bad = changes.find((c) => c.kind !== 'deleted' && recordJsonOf(c).includes('\\u0000'));
  return new IntegrationError(
    'sink_rejected',
    `PostgreSQL refused stream ${stream}${bad ? ` record ${bad.id}` : ''}: ${e.message ?? 'error'}${bad ? ' (text with a NUL character cannot be stored in PostgreSQL)' : ''}. The page was not applied; the run resumes from it once the record is fixed at the source.`,
    { status: 502, cause: err },
  );
}

/** Microsoft Entra tokens for Azure Database for PostgreSQL (flexible server). */
export const POSTGRES_ENTRA_SCOPE = 'https://ossrdbms-aad.database.windows.net/.default';

/**
 * A small pool to the postgres sink's server. With `POSTGRES_HOST` the password is an Entra token for the app's
 * managed identity, asked for on every new connection (so it is fresh: tokens last about an hour) over TLS; with
 * `POSTGRES_URL` it is the secret-store entry, when there is one (trust or peer auth needs none).
 */
export function postgresPool(
  config: Pick<AppConfig, 'postgres' | 'azureClientId'>,
  secrets: { get(name: string): Promise<string> },
): Pool {
  const pg = config.postgres;
  if (!pg) throw new Error('postgres is not configured');
  // The driver loads here, on first use: only a postgres sink pays for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Pool } = require('pg') as typeof import('pg');
  if (pg.host) {
    const credential = azureCredential(config);
    return new Pool({
      host: pg.host,
      port: 5432,
      database: pg.database,
      user: pg.user,
      ssl: { rejectUnauthorized: true },
      max: 4,
      connectionTimeoutMillis: 15_000,
      password: async () => {
        const token = await credential.getToken(POSTGRES_ENTRA_SCOPE);
        if (!token)
          throw new Error(`no Microsoft Entra token for ${POSTGRES_ENTRA_SCOPE}: check AZURE_CLIENT_ID`);
        return token.token;
      },
    });
  }
  return new Pool({
    connectionString: pg.url,
    max: 4,
    connectionTimeoutMillis: 15_000,
    password: async () => {
      try {
        return await secrets.get(pg.passwordSecretName);
      } catch (err) {
        if (err instanceof SecretNotFound) return '';
        throw err;
      }
    },
  });
}

/** Where the sink's server is, for messages: the host, never the URL's user or anything else in it. */
const serverOf = (config: AppConfig) =>
  config.postgres?.host ?? (config.postgres?.url ? new URL(config.postgres.url).host : 'PostgreSQL');

export const postgresSink: SinkModule = {
  kind: 'postgres',
  usage: 'postgres',
  argument: z.undefined({
    error: 'takes nothing after "postgres": the server is POSTGRES_URL or POSTGRES_HOST',
  }),
  requires: (_spec, settings) =>
    settings.postgres
      ? undefined
      : 'the postgres sink needs POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER',
  create(_spec, { config, secrets, postgresPool: given }) {
    const pg = config.postgres;
    let pool: Pool | undefined;
    return new PostgresSink(() => (pool ??= given?.() ?? postgresPool(config, secrets)), {
      schema: pg?.schema ?? defaultSchema(config.tenant?.name ?? 'sandbox'),
      softDelete: pg?.softDelete ?? false,
    });
  },
  async doctor(_spec, { config, secrets }) {
    if (!config.postgres)
      return {
        state: 'fail',
        found: 'SYNC_SINKS names postgres but neither POSTGRES_URL nor POSTGRES_HOST is set',
        action: 'Set POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER.',
      };
    const pool = postgresPool(config, secrets);
    try {
      await pool.query('SELECT 1');
    } finally {
      await pool.end();
    }
    return { state: 'ok', found: `PostgreSQL at ${serverOf(config)} accepts the app’s sign-in` };
  },
};
