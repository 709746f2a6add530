import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import {
  type Change,
  recordJsonOf,
  rejectedError,
  type RejectedRecord,
  shownId,
  sortOut,
} from '../../changes';
import { IntegrationError } from '../../errors';
import type { ChangeBatch, GroupingSink, RunManifest, WriteOutcome } from '../types';
import { copyRows, UNIQUE_VIOLATION } from './copy';
import { erasePostgres } from './erase';
import type { PostgresSinkOptions } from './options';
import {
  ident,
  literal,
  SINK_PAGES_TABLE,
  SINK_QUARANTINE_TABLE,
  SINK_RUNS_TABLE,
  statementName,
} from './names';

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
export type { PostgresSinkOptions } from './options';

/**
 * Pages are stored in groups of about this many records: one transaction and one COPY for the group, not per
 * page (docs/benchmarks.md: what storing per page cost). The sync checkpoints a page only once it is stored.
 */
export const BATCH_ROWS = 5_000;

interface HeldPage {
  page: number;
  /** Its changes, for its checkpoint row, counting those set aside. */
  total: number;
  digest: string;
  changes: Change[];
  rejected: RejectedRecord[];
}

type HeldGroup = { runId: string; pages: HeldPage[]; storing?: { through: number; done: Promise<number> } };

export class PostgresSink implements GroupingSink {
  readonly groups = true as const;
  readonly description: string;
  /** Ends the pool when the sink made it (set by the module, which knows whose pool it is). */
  close: () => Promise<void> = async () => {};
  private readonly ready = new Map<string, Promise<void>>();
  /** Pages written with `hold`, by stream, not stored yet; the group being stored, through which page. */
  private readonly held = new Map<string, HeldGroup>();
  /** Each stream's last store: the next waits for it, also after a drop (a pass failed while one was in flight). */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** By run and stream: the last page whose checkpoint row this process knows is the table's last. */
  private readonly storedThrough = new Map<string, number>();
  /** Streams whose table refused a COPY for a record it had: their new records go in by upsert. */
  private readonly conflicted = new Set<string>();

  constructor(
    private readonly pool: () => Pool,
    readonly options: PostgresSinkOptions,
  ) {
    this.description = `PostgreSQL schema ${options.schema}`;
  }

  /** The stream's table (a stream's name is at most PostgreSQL's 63 bytes), and the sink's own tables beside. */
  names = (stream: string) => [`${this.description}.${stream}`];
  /** The key's row, and what was set aside of it (./erase.ts). */
  erase = (_tenant: string, stream: string, key: string) =>
    erasePostgres(this.pool(), this.options.schema, stream, key, this.description);
  get ownNames() {
    return [SINK_PAGES_TABLE, SINK_RUNS_TABLE, SINK_QUARANTINE_TABLE].map((t) => `${this.description}.${t}`);
  }

  private table(stream: string) {
    return `${ident(this.options.schema)}.${ident(stream)}`;
  }

  /** Each stream's key paths, as its pages say (ChangeBatch.keyPaths): a composite key gets a column per part. */
  private readonly keys = new Map<string, string[]>();

  /**
   * The key's columns: `id` (the key as the change files have it), and for a composite key one column per part
   * (`key_<path>`, taken from `id`, the JSON array of the parts) with the primary key over them — a key of several
   * fields is a primary key of several columns, as in the tenant.
   */
  private keyColumns(stream: string): string {
    const paths = this.keys.get(stream) ?? [];
    if (paths.length < 2) return 'id text PRIMARY KEY';
    const parts = paths.map(
      (p, i) => `${ident(`key_${p}`)} text GENERATED ALWAYS AS ((id::jsonb)->>${i}) STORED`,
    );
    return ['id text NOT NULL UNIQUE', ...parts].join(', ');
  }

  private primaryKey(stream: string): string {
    const paths = this.keys.get(stream) ?? [];
    return paths.length < 2 ? '' : `, PRIMARY KEY (${paths.map((p) => ident(`key_${p}`)).join(', ')})`;
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
           CREATE TABLE IF NOT EXISTS ${s}.${ident(SINK_QUARANTINE_TABLE)} (run_id text NOT NULL, stream text NOT NULL,
             page integer NOT NULL, record_id text NOT NULL, reason text NOT NULL, record text NOT NULL,
             quarantined_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (run_id, stream, record_id));
           CREATE TABLE IF NOT EXISTS ${this.table(stream)} (${this.keyColumns(stream)}, record jsonb NOT NULL,
             content_hash text NOT NULL, synced_at timestamptz NOT NULL, run_id text NOT NULL, deleted_at timestamptz${this.primaryKey(stream)});
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

  async write(
    batch: ChangeBatch,
    options: { abortSignal?: AbortSignal; hold?: boolean } = {},
  ): Promise<WriteOutcome> {
    if (batch.keyPaths && !this.keys.has(batch.stream)) this.keys.set(batch.stream, batch.keyPaths);
    // The last change of a record in a page wins (a page never lists a record twice, but be exact).
    const byId = new Map<string, Change>();
    for (const c of batch.changes) byId.set(c.id, c);
    const all = [...byId.values()];
    const digest = createHash('sha256')
      .update(all.map((c) => c.changeId).join('\n'))
      .digest('hex');
    // Text PostgreSQL cannot store fails the page by name, or is set aside: checked before anything is sent.
    const { kept, rejected } = sortOut(all, 'postgres');
    if (rejected.length && this.options.rejected !== 'quarantine')
      throw rejectedError('PostgreSQL', batch.stream, rejected[0], rejected.length - 1);
    const page: HeldPage = { page: batch.page, total: all.length, digest, changes: kept, rejected };
    // A page comes again only when its pass resumed from before it: what was held from there on is stale.
    let held = this.held.get(batch.stream);
    if (held?.runId !== batch.runId) held = { runId: batch.runId, pages: [] };
    if ((held.pages.at(-1)?.page ?? 0) >= batch.page)
      held.pages = held.pages.filter((p) => p.page < batch.page);
    held.pages.push(page);
    this.held.set(batch.stream, held);
    const rows = held.pages.reduce((n, p) => n + p.changes.length, 0);
    if (!options.hold)
      return { rejected: rejected.length + (await this.flush(batch.runId, batch.stream)).rejected };
    if (rows < (this.options.batchRows ?? BATCH_ROWS)) return { rejected: rejected.length, held: true };
    // A full group is stored while the next one gathers (the caller's pages keep coming): the group before it
    // must be stored first, and is then reported stored, so at most one group per stream is in flight.
    const before = held.storing;
    const late = before ? await before.done : 0;
    const done = this.store(batch.runId, batch.stream, held.pages);
    done.catch(() => undefined); // awaited by the next group or the flush; a failure is reported there
    held.storing = { through: batch.page, done };
    held.pages = [];
    return {
      rejected: rejected.length,
      held: true,
      ...(before ? { stored: { throughPage: before.through, rejected: late } } : {}),
    };
  }

  async flush(runId: string, stream: string): Promise<WriteOutcome> {
    const held = this.held.get(stream);
    this.held.delete(stream);
    if (held?.runId !== runId) return { rejected: 0 };
    const late = held.storing ? await held.storing.done : 0;
    return { rejected: late + (held.pages.length ? await this.store(runId, stream, held.pages) : 0) };
  }

  drop(runId: string, stream: string): void {
    this.held.delete(stream);
    // A pass (or a slice of it) starts: another process may have stored pages since, so the next store asks.
    this.storedThrough.delete(`${runId}\0${stream}`);
  }

  /**
   * Stores pages in one transaction: those already applied with the same change ids are skipped (a page delivered
   * again after a crash), the rest's records go in — new ones by `COPY` while the table has none of them, the
   * others by one upsert — with their deletes and their checkpoint rows. Should PostgreSQL refuse a record for its
   * data (a case the check in `write` does not know), each record is tried alone to find which, and that one is
   * named — or set aside — like the others. Answers how many it set aside that `write` had not.
   */
  private store(runId: string, stream: string, pages: HeldPage[]): Promise<number> {
    const done = (this.inFlight.get(stream) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.storeNow(runId, stream, pages));
    this.inFlight.set(stream, done);
    return done;
  }

  private async storeNow(runId: string, stream: string, pages: HeldPage[], probed = false): Promise<number> {
    const client = await this.pool().connect();
    let culprits: RejectedRecord[] = [];
    const last = new Map<string, { change: Change; page: number }>();
    try {
      await this.ensure(client, stream);
      // The savepoint a COPY that meets a record the table has rolls back to; one round trip with the BEGIN.
      await client.query('BEGIN; SAVEPOINT copy');
      // Which of the pages were applied already (delivered again after a crash): asked unless this process
      // stored every page of the run's stream so far and these come after them.
      const key = `${runId}\0${stream}`;
      const through = this.storedThrough.get(key);
      let applied: number[] = [];
      if (through === undefined || pages.some((p) => p.page <= through)) {
        const { rows } = await client.query<{ applied: number[]; last: number | null }>({
          name: statementName(this.options.schema, stream, 'applied'),
          text: `SELECT ARRAY(SELECT x.page FROM unnest($3::int[], $4::text[]) AS x(page, digest)
             JOIN ${this.pages} p ON p.run_id = $1 AND p.stream = $2 AND p.page = x.page AND p.change_digest = x.digest) AS applied,
             (SELECT max(page) FROM ${this.pages} WHERE run_id = $1 AND stream = $2) AS last`,
          values: [runId, stream, pages.map((p) => p.page), pages.map((p) => p.digest)],
        });
        applied = rows[0].applied;
        this.storedThrough.set(key, rows[0].last ?? 0);
      }
      const todo = pages.filter((p) => !applied.includes(p.page));
      // Across pages, too, the last change of a record wins (a listing by offset can show a record twice).
      for (const p of todo) for (const c of p.changes) last.set(c.id, { change: c, page: p.page });
      const creates: Change[] = [];
      const upserts: Change[] = [];
      const deletes: string[] = [];
      for (const { change: c } of last.values())
        if (c.kind === 'deleted') deletes.push(c.id);
        else (c.kind === 'created' && !this.conflicted.has(stream) ? creates : upserts).push(c);
      if (creates.length) {
        // COPY is the fastest way in, and refuses a record the table already has (a state reset, a full
        // re-sync): then the upsert takes them, and this stream no longer tries COPY in this process.
        try {
          await copyRows(client, this.table(stream), creates, runId); // COMMIT releases the savepoint
        } catch (err) {
          await client.query('ROLLBACK TO SAVEPOINT copy');
          if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
          this.conflicted.add(stream);
          upserts.push(...creates);
        }
      }
      const rejected = todo.flatMap((p) => p.rejected.map((r) => ({ ...r, page: p.page })));
      if (todo.length)
        await client.query({
          // Prepared once per connection and stream: the plan of this statement is most of a small batch's cost.
          name: statementName(this.options.schema, stream, this.options.softDelete ? 'soft' : 'hard'),
          text: this.applyStatement(stream),
          values: [
            runId,
            stream,
            upserts.map((c) => c.id),
            upserts.map(recordJsonOf),
            upserts.map((c) => c.changeId),
            deletes,
            // Shown escaped (JSON), so a NUL or lone surrogate is stored as the characters that describe it.
            rejected.map((r) => r.page),
            rejected.map((r) => shownId(r.id)),
            rejected.map((r) => r.reason),
            rejected.map((r) => r.json),
            todo.map((p) => p.page),
            todo.map((p) => p.digest),
            todo.map((p) => p.total),
          ],
        });
      await client.query('COMMIT');
      this.storedThrough.set(key, Math.max(this.storedThrough.get(key) ?? 0, ...pages.map((p) => p.page)));
    } catch (err) {
      this.storedThrough.delete(`${runId}\0${stream}`); // not known any more: the next store asks
      await client.query('ROLLBACK').catch(() => undefined);
      if (!probed && isDataError(err))
        culprits = await this.probe(
          client,
          [...last.values()].map((l) => l.change).filter((c) => c.kind !== 'deleted'),
        );
      if (!culprits.length) throw refused(err, stream);
    } finally {
      client.release();
    }
    if (!culprits.length) return 0;
    if (this.options.rejected !== 'quarantine')
      throw rejectedError('PostgreSQL', stream, culprits[0], culprits.length - 1);
    // Each set aside in the page that held its last change; the others go in as before.
    const named = new Set(culprits.map((r) => r.id));
    const pageOf = (id: string) => last.get(id)?.page;
    const rest = pages.map((p) => ({
      ...p,
      changes: p.changes.filter((c) => !named.has(c.id)),
      rejected: [...p.rejected, ...culprits.filter((r) => pageOf(r.id) === p.page)],
    }));
    await this.storeNow(runId, stream, rest, true);
    return culprits.length;
  }

  private get pages() {
    return `${ident(this.options.schema)}.${ident(SINK_PAGES_TABLE)}`;
  }

  /** The upserts, the deletes, the records set aside and the pages' checkpoint rows: one statement. */
  private applyStatement(stream: string): string {
    const t = this.table(stream);
    return `WITH up AS (
         INSERT INTO ${t} (id, record, content_hash, synced_at, run_id, deleted_at)
         SELECT u.id, u.record::jsonb, u.hash, now(), $1, NULL FROM unnest($3::text[], $4::text[], $5::text[]) AS u(id, record, hash)
         ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, content_hash = EXCLUDED.content_hash,
           synced_at = EXCLUDED.synced_at, run_id = EXCLUDED.run_id, deleted_at = NULL
       ), del AS (
         ${
           this.options.softDelete
             ? `UPDATE ${t} SET deleted_at = now(), run_id = $1 WHERE ${t}.id = ANY($6::text[]) AND ${t}.deleted_at IS NULL`
             : `DELETE FROM ${t} WHERE ${t}.id = ANY($6::text[])`
         }
       ), q AS (
         INSERT INTO ${ident(this.options.schema)}.${ident(SINK_QUARANTINE_TABLE)} (run_id, stream, page, record_id, reason, record)
         SELECT $1, $2, r.page, r.id, r.reason, r.record FROM unnest($7::int[], $8::text[], $9::text[], $10::text[]) AS r(page, id, reason, record)
         ON CONFLICT (run_id, stream, record_id) DO UPDATE SET page = EXCLUDED.page, reason = EXCLUDED.reason,
           record = EXCLUDED.record, quarantined_at = now()
       )
       INSERT INTO ${this.pages} (run_id, stream, page, change_digest, changes)
       SELECT $1, $2, p.page, p.digest, p.changes FROM unnest($11::int[], $12::text[], $13::int[]) AS p(page, digest, changes)
       ON CONFLICT (run_id, stream, page) DO UPDATE SET change_digest = EXCLUDED.change_digest,
         changes = EXCLUDED.changes, applied_at = now()`;
  }

  /** The records PostgreSQL refuses on their own (id as text, record as jsonb), with its reason for each. */
  private async probe(client: PoolClient, upserts: Change[]): Promise<RejectedRecord[]> {
    const found: RejectedRecord[] = [];
    for (const c of upserts) {
      try {
        await client.query('SELECT $1::text, $2::jsonb', [c.id, recordJsonOf(c)]);
      } catch (err) {
        if (!isDataError(err)) throw err;
        found.push({
          id: c.id,
          reason: `PostgreSQL refuses it: ${(err as Error).message}`,
          json: recordJsonOf(c),
        });
      }
    }
    return found;
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

/** A refusal because of the data (class 22, data exception; 23, integrity), not the connection or permissions. */
const isDataError = (err: unknown) => /^2[23]/.test(String((err as { code?: unknown }).code ?? ''));

/** PostgreSQL refused the page for a reason no single record explains: name the stream, keep the cause. */
function refused(err: unknown, stream: string): Error {
  if (!isDataError(err)) return err as Error; // not the data's fault: connection, permissions, …
  return new IntegrationError(
    'sink_rejected',
    `PostgreSQL refused stream ${stream}: ${(err as Error).message ?? 'error'}. The page was not applied; the run resumes from it.`,
    { status: 502, cause: err },
  );
}
