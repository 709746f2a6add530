import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalFileSecretStore } from '../../shared/secrets';
import { resolveStreams } from '../../sandbox/streams';
import type { Change } from '../../shared/changes';
import { DirectorySink, MultiSink, PostgresSink } from '../../shared/sinks';
import { runCli } from '../helpers/cli';
import { failure } from '../helpers/failure';
import { eventually } from '../helpers/host';
import { startPostgres, type Postgres } from '../helpers/postgres';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';
import { sourceRecords } from '../helpers/source';
import { stackFixture } from '../helpers/stack';

/**
 * The postgres sink against a real PostgreSQL (Debian's, started by the test on a free port) and the sandbox:
 * the CLI fills one table per stream, a second sync after changes at the source leaves every table equal to the
 * source having touched only the changed rows, a page delivered twice is applied once, a record PostgreSQL
 * refuses fails its page by name, and a host killed mid-run resumes to tables equal to the source.
 */
jest.setTimeout(180_000);

const STREAMS = resolveStreams({});
let pg: Postgres;
let sb: SandboxFixture;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  [pg, sb] = await Promise.all([startPostgres(), sandboxFixture({ records: 150 })]);
  dir = mkdtempSync(join(tmpdir(), 'ti-pg-sink-'));
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  env = { ...sb.settings, LOCAL_SECRETS_FILE: secretsFile, POSTGRES_URL: pg.url, AzureWebJobsStorage: '' };
});
afterAll(async () => {
  await sb?.close();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const source = sourceRecords;

async function table(schema: string, stream: string) {
  const rows = await pg.query<{ id: string; record: unknown; run_id: string; deleted_at: Date | null }>(
    `SELECT id, record, run_id, deleted_at FROM "${schema}"."${stream}" ORDER BY id`,
  );
  return new Map(rows.map((r) => [r.id, r]));
}

async function expectEqualToSource(environment: Record<string, string>, schema: string) {
  for (const { name } of STREAMS) {
    const [want, have] = await Promise.all([source(environment, name), table(schema, name)]);
    expect([name, [...have.keys()].sort()]).toEqual([name, [...want.keys()].sort()]);
    for (const [id, record] of want) expect([name, id, have.get(id)?.record]).toEqual([name, id, record]);
  }
}

// Full passes: the table must follow deletions too, which only a full pass can see.
const sync = async () => {
  const r = await runCli(['sync', '--sink', 'postgres', '--full-pass', '--json'], { env, cwd: dir });
  expect([r.code, r.code ? r.stdout : '']).toEqual([0, '']);
  return JSON.parse(r.stdout) as { runId: string; streams: Record<string, Record<string, number>> };
};

describe('postgres sink through `tenant-integrations sync --sink postgres`', () => {
  it('fills one table per stream; after creates, updates and deletes at the source a second sync leaves each table equal to it, touching only the changed rows', async () => {
    const first = await sync();
    await expectEqualToSource(env, 'tenant_acme');
    const before = await table('tenant_acme', 'controls');
    expect([...before.values()].every((r) => r.run_id === first.runId)).toBe(true);

    const mutated = (
      await sb.hook('data/mutate', { collection: 'controls', creates: 3, updates: 4, deletes: 2 })
    ).body as { created: string[]; updated: string[]; deleted: string[] };
    const second = await sync();
    expect(second.streams.controls).toMatchObject({ created: 3, updated: 4, deleted: 2 });
    await expectEqualToSource(env, 'tenant_acme');
    const after = await table('tenant_acme', 'controls');
    const touched = [...after.values()].filter((r) => r.run_id === second.runId).map((r) => r.id);
    expect(touched.sort()).toEqual([...mutated.created, ...mutated.updated].sort());
    for (const id of mutated.deleted) expect(after.has(id)).toBe(false);
    // Other streams: nothing changed, nothing written.
    const users = await table('tenant_acme', 'users');
    expect([...users.values()].every((r) => r.run_id === first.runId)).toBe(true);
    // The run's own record, and one checkpoint row per page that had changes.
    const runs = await pg.query(`SELECT run_id, ok FROM tenant_acme._sync_runs ORDER BY finished_at`);
    expect(runs).toEqual([
      { run_id: first.runId, ok: true },
      { run_id: second.runId, ok: true },
    ]);
    const pages = await pg.query<{ changes: number }>(
      `SELECT changes FROM tenant_acme._sync_pages WHERE run_id = $1 AND stream = 'controls'`,
      [second.runId],
    );
    expect(pages.reduce((n, p) => n + p.changes, 0)).toBe(9);
  });

  it('doctor checks the postgres sink: it signs in, or it fails naming the server', async () => {
    const ok = await runCli(['doctor', '--json'], { env: { ...env, SYNC_SINKS: 'postgres' }, cwd: dir });
    const report = JSON.parse(ok.stdout) as { checks: Array<{ name: string; state: string; found: string }> };
    expect([ok.code, report.checks.find((c) => c.name === 'sink postgres')]).toEqual([
      0,
      expect.objectContaining({ state: 'ok', found: expect.stringContaining('accepts the app') }),
    ]);
    const closed = pg.url.replace(`:${pg.port}/`, ':1/');
    const bad = await runCli(['doctor', '--json'], {
      env: { ...env, SYNC_SINKS: 'postgres', POSTGRES_URL: closed },
      cwd: dir,
    });
    const failed = (JSON.parse(bad.stdout) as typeof report).checks.find((c) => c.name === 'sink postgres');
    expect([bad.code, failed?.state]).toEqual([1, 'fail']);
  });

  it('a missing setting is a set-up error naming what to set', async () => {
    const r = await runCli(['sync', '--sink', 'postgres'], { env: { ...env, POSTGRES_URL: '' }, cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the postgres sink needs POSTGRES_URL');
    const withPassword = await runCli(['sync', '--sink', 'postgres'], {
      env: { ...env, POSTGRES_URL: pg.url.replace('postgres@', 'postgres:hunter2@') },
      cwd: dir,
    });
    expect(withPassword.code).toBe(2);
    expect(withPassword.stderr).toContain('POSTGRES_URL: must not hold a password');
    expect(withPassword.stderr).not.toContain('hunter2');
  });
});

describe('PostgresSink', () => {
  const change = (id: string, record: unknown, kind: Change['kind'] = 'created'): Change =>
    kind === 'deleted'
      ? { changeId: `del-${id}`, stream: 'items', kind, id }
      : { changeId: `${id}-${JSON.stringify(record).length}`, stream: 'items', kind, id, record };
  const batch = (page: number, changes: Change[], runId = 'run-1') => ({
    tenant: 'acme',
    runId,
    stream: 'items',
    page,
    changes,
  });

  it('a page delivered again is applied once; one whose content changed meanwhile is applied again', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'once' });
    const page = batch(1, [change('a', { n: 1 }), change('b', { n: 2 })]);
    await sink.write(page);
    const first = await pg.query<{ synced_at: Date }>('SELECT synced_at FROM once.items ORDER BY id');
    await sink.write(page);
    expect(await pg.query('SELECT synced_at FROM once.items ORDER BY id')).toEqual(first);
    expect(await pg.query('SELECT page, changes FROM once._sync_pages')).toEqual([{ page: 1, changes: 2 }]);
    await sink.write(batch(1, [change('a', { n: 10 }), change('b', { n: 2 })]));
    expect((await pg.query('SELECT record FROM once.items WHERE id = $1', ['a']))[0].record).toEqual({
      n: 10,
    });
    expect(await pg.query('SELECT count(*)::int AS n FROM once._sync_pages')).toEqual([{ n: 1 }]);
  });

  it('pages written with hold are stored in groups: none visible before, each group reported stored by the next, the rest by flush', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'grouped', batchRows: 4 });
    const ids = async () =>
      (await pg.query<{ id: string }>('SELECT id FROM grouped.items ORDER BY id').catch(() => [])).map(
        (r) => r.id,
      );
    const two = (page: number) => batch(page, [change(`p${page}a`, { page }), change(`p${page}b`, { page })]);
    expect(await sink.write(two(1), { hold: true })).toEqual({ rejected: 0, held: true });
    expect(await ids()).toEqual([]);
    // The group is full: stored while the next gathers, so not reported stored yet.
    expect(await sink.write(two(2), { hold: true })).toEqual({ rejected: 0, held: true });
    await sink.write(two(3), { hold: true });
    expect(await sink.write(two(4), { hold: true })).toEqual({
      rejected: 0,
      held: true,
      stored: { throughPage: 2, rejected: 0 },
    });
    expect(await ids()).toEqual(['p1a', 'p1b', 'p2a', 'p2b']);
    await sink.write(two(5), { hold: true });
    expect(await sink.flush('run-1', 'items')).toEqual({ rejected: 0 });
    expect((await ids()).length).toBe(10);
    expect(await pg.query('SELECT page, changes FROM grouped._sync_pages ORDER BY page')).toEqual(
      [1, 2, 3, 4, 5].map((page) => ({ page, changes: 2 })),
    );
  });

  it('beside a folder sink, a page counts as stored only once PostgreSQL has stored it too', async () => {
    const out = mkdtempSync(join(tmpdir(), 'ti-pg-multi-'));
    try {
      const sink = new MultiSink([
        new DirectorySink(out),
        new PostgresSink(() => pg.pool, { schema: 'beside', batchRows: 2 }),
      ]);
      const one = (page: number) => batch(page, [change(`r${page}`, { page })]);
      expect(await sink.write(one(1), { hold: true })).toEqual({ rejected: 0, held: true });
      await sink.write(one(2), { hold: true }); // a full group: stored while the next gathers
      await sink.write(one(3), { hold: true });
      expect(await sink.write(one(4), { hold: true })).toEqual({
        rejected: 0,
        held: true,
        stored: { throughPage: 2, rejected: 0 },
      });
      expect(await sink.flush('run-1', 'items')).toBeUndefined();
      expect(await pg.query('SELECT count(*)::int AS n FROM beside.items')).toEqual([{ n: 4 }]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('a pass resumed after another process stored pages of it asks which were applied, and skips them', async () => {
    const here = new PostgresSink(() => pg.pool, { schema: 'elsewhere' });
    const there = new PostgresSink(() => pg.pool, { schema: 'elsewhere' }); // another host, same run
    await here.write(batch(1, [change('a', { v: 1 })]));
    await there.write(batch(2, [change('b', { v: 1 })]));
    const stored = await pg.query('SELECT id, synced_at FROM elsewhere.items ORDER BY id');
    // The slice resumes here from page 2 (its checkpoint was not written): the page comes again, unchanged.
    here.drop('run-1', 'items');
    await here.write(batch(2, [change('b', { v: 1 })]));
    expect(await pg.query('SELECT id, synced_at FROM elsewhere.items ORDER BY id')).toEqual(stored);
  });

  it('held pages a failed pass leaves are forgotten (drop) and stored once when they come again', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'dropped', batchRows: 100 });
    await sink.write(batch(1, [change('a', { v: 'old' })]), { hold: true });
    sink.drop('run-1', 'items');
    await sink.write(batch(1, [change('a', { v: 'new' })]), { hold: true });
    await sink.flush('run-1', 'items');
    expect(await pg.query('SELECT id, record FROM dropped.items')).toEqual([
      { id: 'a', record: { v: 'new' } },
    ]);
  });

  it('new records the table already has (its state was reset) go in by upsert, not as a failed COPY', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'reset' });
    await sink.write(batch(1, [change('a', { v: 1 }), change('b', { v: 1 })]));
    const again = new PostgresSink(() => pg.pool, { schema: 'reset' });
    await again.write(batch(1, [change('a', { v: 2 }), change('c', { v: 2 })], 'run-2'));
    expect(await pg.query('SELECT id, record, run_id FROM reset.items ORDER BY id')).toEqual([
      { id: 'a', record: { v: 2 }, run_id: 'run-2' },
      { id: 'b', record: { v: 1 }, run_id: 'run-1' },
      { id: 'c', record: { v: 2 }, run_id: 'run-2' },
    ]);
  });

  it('a record PostgreSQL refuses (a NUL character) fails its page by stream and record id; nothing of the page is applied', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'refused' });
    await sink.write(batch(1, [change('ok-1', { t: 'fine' })]));
    const err = await failure(
      sink.write(batch(2, [change('ok-2', { t: 'fine' }), change('bad-7', { t: 'a\u0000b' })])),
    );
    expect(err.code).toBe('sink_rejected');
    expect(err.message).toContain('stream items record "bad-7"');
    expect(err.message).toContain('NUL');
    expect((await pg.query('SELECT id FROM refused.items ORDER BY id')).map((r) => r.id)).toEqual(['ok-1']);
    expect(await pg.query('SELECT page FROM refused._sync_pages')).toEqual([{ page: 1 }]);
  });

  it('soft deletes keep the row with deleted_at; a later create clears it', async () => {
    const sink = new PostgresSink(() => pg.pool, { schema: 'soft', softDelete: true });
    await sink.write(batch(1, [change('x', { v: 1 })]));
    await sink.write(batch(2, [change('x', undefined, 'deleted')]));
    expect((await pg.query('SELECT deleted_at FROM soft.items'))[0].deleted_at).toBeInstanceOf(Date);
    await sink.write(batch(1, [change('x', { v: 2 })], 'run-2'));
    expect(await pg.query('SELECT record, deleted_at FROM soft.items')).toEqual([
      { record: { v: 2 }, deleted_at: null },
    ]);
  });
});

describe('postgres sink on the local host', () => {
  it('a host killed mid-run resumes: every table equals the source, each change applied once', async () => {
    const stack = await stackFixture({
      sandbox: { records: 300 },
      // Small groups, so some are stored (and some held) when the kill comes.
      env: {
        SYNC_SINKS: 'postgres',
        POSTGRES_URL: pg.url,
        POSTGRES_SCHEMA: 'hosted',
        POSTGRES_BATCH_ROWS: '60',
      },
    });
    try {
      // Every page slow until the kill, so it comes mid-run however late the poll below sees two pages stored (with
      // ten slow ones, a loaded machine once saw the run finish first: nothing was left to resume).
      await stack.sb.hook('faults', { route: 'graphql', delayMs: 400, count: 1000 });
      expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
      await eventually(
        async () =>
          Number(
            (
              await pg
                .query<{ n: number }>('SELECT count(*)::int AS n FROM hosted._sync_pages')
                .catch(() => [{ n: 0 }])
            )[0].n,
          ) >= 2,
        'a few pages applied',
      );
      await stack.restart({ kill: true });
      await stack.sb.hook('faults/clear');
      // The timer would resume it; here a person does.
      const finished = await eventually(
        async () => {
          const r = await stack.json('manage/runs?kind=sync');
          const [latest] = r.body.runs;
          if (latest?.outcome === 'running' || !latest) {
            const start = await stack.json('manage/sync', { method: 'POST' });
            if (start.status !== 202 && start.status !== 409) return false;
            return false;
          }
          return latest.outcome === 'succeeded' && latest;
        },
        'the resumed run to succeed',
        120_000,
      );
      expect(finished.outcome).toBe('succeeded');
      expect(stack.logs()).toMatch(/resumed from checkpoint/);
      const hostEnv = {
        ...stack.sb.settings,
        LOCAL_SECRETS_FILE: stack.secretsFile,
        AzureWebJobsStorage: '',
      };
      await expectEqualToSource(hostEnv, 'hosted');
      // Each change once: per stream, the checkpoint rows' changes add up to the records created.
      const pages = await pg.query<{ stream: string; n: number; pages: number }>(
        'SELECT stream, sum(changes)::int AS n, count(*)::int AS pages FROM hosted._sync_pages GROUP BY stream ORDER BY stream',
      );
      for (const p of pages) expect([p.stream, p.n]).toEqual([p.stream, 300]);
      expect(pages.length).toBe(STREAMS.length);
    } finally {
      await stack.close();
    }
  });
});
