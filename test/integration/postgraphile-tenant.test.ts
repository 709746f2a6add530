import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, visit, type FieldNode } from 'graphql';
import type { StreamDefinition } from '../../shared/streams';
import { createAccessLayer } from '../../shared/access';
import { storedCatalog } from '../../shared/catalog';
import { loadConfig } from '../../shared/app';
import { DirectorySink } from '../../shared/sinks';
import { beginRun, syncStream } from '../../shared/sync/run-steps';
import { FileSyncStateStore } from '../../shared/sync/file-state';
import { runCli } from '../helpers/cli';
import { cliTenant, type TenantSyncSummary } from '../helpers/cli-tenant';
import { startPostgraphileTenant, TENANT_ROWS, type PostgraphileTenant } from '../helpers/postgraphile';
import { FileCatalogStore } from '../../shared/state/catalog-store';

/**
 * First contact with a real GraphQL server nobody here wrote: PostGraphile v4 with its defaults over PostgreSQL —
 * Relay connections with `nodes`/`edges`/`pageInfo`/`totalCount`, `nodeId`, `orderBy` enums, reverse relations on
 * every type, UUID and BigInt scalars, a composite key, a table without a key, a relation reachable only through its
 * parent — signed in through the sandbox's identity provider. Everything through the CLI an operator runs.
 */

jest.setTimeout(300_000);

type Summary = TenantSyncSummary;

let pgt: PostgraphileTenant;
const t = cliTenant('ti-pgl-');
const { env, sync, delivered } = t;
const dir = () => t.dir;
const changed = (s: Summary) =>
  Object.values(s.streams).reduce((n, c) => n + c.created + c.updated + c.deleted, 0);
const read = (s: Summary) => Object.values(s.streams).reduce((n, c) => n + c.read, 0);
const tenantRows = async () =>
  Number(
    (
      await pgt.pg.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM app.organisation) + (SELECT count(*) FROM app.person)
              + (SELECT count(*) FROM app.control) + (SELECT count(*) FROM app.evidence)
              + (SELECT count(*) FROM app.kpi_value) + (SELECT count(*) FROM app.audit_entry)
              + (SELECT count(*) FROM app.reading) AS n`,
      )
    )[0].n,
  );

/** Every object anywhere in a record that is a to-many relation's answer (a connection, or a list of objects). */
function toManyIn(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.some((v) => v && typeof v === 'object') ? [path] : [];
  if (!value || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  if ('edges' in o || 'nodes' in o || 'totalCount' in o) return [path];
  return Object.entries(o).flatMap(([k, v]) => toManyIn(v, path ? `${path}.${k}` : k));
}

beforeAll(async () => {
  pgt = await startPostgraphileTenant();
  t.settings = pgt.settings;
  t.clientSecret = pgt.clientSecret;
});
afterAll(() => pgt?.stop());

describe('PostGraphile (v4 defaults) through the CLI', () => {
  it('discover: records of their own fields, keys from their identity (UUID, BigInt, composite), the parent-only relation as a child stream', async () => {
    const r = await runCli(['discover', '--json'], { env: env() });
    expect(r.code).toBe(0);
    const streams = (JSON.parse(r.stdout) as { streams: StreamDefinition[] }).streams;
    const by = Object.fromEntries(streams.map((s) => [s.name, s]));
    expect(Object.fromEntries(streams.map((s) => [s.name, s.idPath]))).toEqual({
      allAuditEntries: '',
      allControls: 'id',
      allKpiValues: ['kpiId', 'period'],
      allOrganisations: 'id',
      allPeople: 'id',
      allReadings: 'id',
      evidencesByControlId: ['parentKey', 'id'],
    });
    expect(by.evidencesByControlId.parent).toEqual({
      stream: 'allControls',
      key: 'id',
      variable: 'parentKey',
      as: 'parentKey',
    });
    // Newest first where the tenant can order by the change time; the keyless table cannot be read incrementally.
    for (const name of ['allControls', 'allKpiValues', 'allOrganisations', 'allPeople', 'allReadings'])
      expect([name, by[name].incremental?.kind, by[name].incremental?.field]).toEqual([
        name,
        'order',
        'updatedAt',
      ]);
    expect(by.allAuditEntries.incremental).toBeUndefined();
    // PostGraphile scans the rest of a table for `hasNextPage`: proved unneeded (full pages until the last), it is not
    // asked of a root stream; a child stream keeps it. Records come as `nodes`, without an edge around each.
    for (const name of ['allControls', 'allKpiValues', 'allOrganisations', 'allPeople', 'allReadings']) {
      expect([name, by[name].document.includes('hasNextPage')]).toEqual([name, false]);
      expect(by[name].paths.records).toBe(`${name}.nodes`);
    }
    expect(by.evidencesByControlId.document).toContain('hasNextPage');
    const proposals = (
      JSON.parse(r.stdout) as {
        proposals: Array<{ stream: string; leftOut: Array<{ field: string; reason: string }> }>;
      }
    ).proposals;
    const readings = proposals.find((p) => p.stream === 'allReadings');
    expect(readings?.leftOut).toContainEqual({
      field: 'nodeId',
      reason: expect.stringMatching(/^the server's global id, made from the key \(id\)/),
    });
    expect(by.allReadings.document).not.toMatch(/\bnodeId\b/);
    // Inside a record: no field that takes arguments (a relation's paging), no connection, no count of others.
    for (const s of streams) {
      const inRecords: string[] = [];
      let depth = 0;
      visit(parse(s.document), {
        Field: {
          enter(node: FieldNode) {
            if (depth > 0) {
              if (
                node.arguments?.length ||
                ['edges', 'nodes', 'totalCount', 'pageInfo'].includes(node.name.value)
              )
                inRecords.push(node.name.value);
              depth++;
            } else if (node.name.value === 'node') depth = 1;
          },
          leave(node: FieldNode) {
            if (depth > 0) depth--;
            void node;
          },
        },
      });
      expect([s.name, inRecords]).toEqual([s.name, []]);
    }
    // The words an operator reads: the composite key, the child's parent, what was left out and where it is read.
    const words = await runCli(['discover'], { env: env() });
    expect(words.stderr).toMatch(/allKpiValues\n(.*\n)*?\s+key:\s+kpiId \+ period/);
    expect(words.stderr).toMatch(/evidencesByControlId\n(.*\n)*?\s+parent:\s+allControls/);
    expect(words.stderr).toContain('controlsByOwnerId — to-many (a connection) — read as stream allControls');
    expect(words.stderr).toMatch(/allReadings\n(.*\n)*?.*reads incrementally: newest first by updatedAt/);
  });

  it('sync: every row once under its key, identical rows once with their count, every child once; one insert and one update are exactly two changes', async () => {
    const first = await sync();
    expect([first.code, first.summary.ok]).toEqual([0, true]);
    const s = first.summary.streams;
    expect(
      Object.fromEntries(Object.entries(s).map(([k, v]) => [k, [v.created, v.duplicates ?? 0]])),
    ).toEqual({
      allAuditEntries: [
        TENANT_ROWS.audit_entry.distinct,
        TENANT_ROWS.audit_entry.rows - TENANT_ROWS.audit_entry.distinct,
      ],
      allControls: [TENANT_ROWS.control, 0],
      allKpiValues: [TENANT_ROWS.kpi_value, 0],
      allOrganisations: [TENANT_ROWS.organisation, 0],
      allPeople: [TENANT_ROWS.person, 0],
      allReadings: [100, 0],
      evidencesByControlId: [TENANT_ROWS.evidence, 0],
    });
    // Keys are the tables' own: the UUID, the BigInt, the composite as its two parts.
    const evidence = await delivered(first.summary.runId, 'evidencesByControlId');
    const rows = await pgt.pg.query<{ id: string; control_id: number }>(
      'SELECT id, control_id FROM app.evidence',
    );
    expect(evidence.map((c) => JSON.parse(c.id)).sort()).toEqual(
      rows.map((r) => [r.control_id, r.id]).sort(),
    );
    const kpis = await delivered(first.summary.runId, 'allKpiValues');
    expect(kpis.map((c) => c.id)).toContain(JSON.stringify([3, '2026-07']));
    expect(new Set(kpis.map((c) => c.id)).size).toBe(TENANT_ROWS.kpi_value);
    // No record carries a to-many relation, at any depth.
    for (const stream of Object.keys(s))
      for (const c of await delivered(first.summary.runId, stream))
        expect([stream, toManyIn(c.record)]).toEqual([stream, []]);
    // An evidence record does not repeat its parent: retitling a control is one change, not one per evidence.
    expect(Object.keys(evidence[0].record as object).sort()).toEqual(
      // No `nodeId`: PostGraphile's global id, made from the key, left out at discovery (the key is there).
      ['controlId', 'id', 'note', 'parentKey', 'updatedAt'].sort(),
    );

    await pgt.pg.query(`INSERT INTO app.control (owner_id, title) VALUES (7, 'A new control')`);
    await pgt.pg.query(`UPDATE app.control SET title = 'Retitled' WHERE id = 40`);
    const second = await sync();
    expect([second.code, changed(second.summary)]).toEqual([0, 2]);
    expect(second.summary.streams.allControls).toMatchObject({ created: 1, updated: 1, pass: 'incremental' });
    const controls = await delivered(second.summary.runId, 'allControls');
    expect(controls.map((c) => [c.kind, (c.record as { title?: string } | undefined)?.title]).sort()).toEqual(
      [
        ['created', 'A new control'],
        ['updated', 'Retitled'],
      ],
    );
    await pgt.pg.query(`DELETE FROM app.control WHERE title = 'A new control'`);
    await pgt.pg.query(`UPDATE app.control SET title = 'Control 40' WHERE id = 40`);
  });

  it('postgres sink: a composite key is a primary key of two columns, identical rows are one, the tables hold what the run reports', async () => {
    const r = await runCli(['sync', '--sink', 'postgres', '--json'], {
      env: env({ POSTGRES_URL: pgt.pg.url, POSTGRES_SCHEMA: 'copy' }),
    });
    expect(r.code).toBe(0);
    const summary = JSON.parse(r.stdout) as Summary;
    for (const [stream, c] of Object.entries(summary.streams)) {
      const [{ n }] = await pgt.pg.query<{ n: string }>(`SELECT count(*) AS n FROM copy."${stream}"`);
      expect([stream, Number(n)]).toEqual([stream, c.created]);
    }
    const pk = async (table: string) =>
      (
        await pgt.pg.query<{ column_name: string }>(
          `SELECT a.attname AS column_name FROM pg_index i
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
          [`copy."${table}"`],
        )
      ).map((x) => x.column_name);
    expect(await pk('allKpiValues')).toEqual(['key_kpiId', 'key_period']);
    expect(await pk('evidencesByControlId')).toEqual(['key_parentKey', 'key_id']);
    const [row] = await pgt.pg.query<{ key_kpiId: string; key_period: string }>(
      `SELECT "key_kpiId", key_period FROM copy."allKpiValues" WHERE record->>'value' = '307'`,
    );
    expect(row).toEqual({ key_kpiId: '3', key_period: '2026-07' });
    expect(summary.streams.allAuditEntries.duplicates).toBe(4);
  });

  it('a full pass that reads fewer records than the connection’s totalCount fails that stream by name', async () => {
    const r = await runCli(['discover', '--out', join(dir(), 'streams.json')], { env: env() });
    expect(r.code).toBe(0);
    const file = JSON.parse(await readFile(join(dir(), 'streams.json'), 'utf8')) as {
      streams: StreamDefinition[];
    };
    // A hand edit that skips a record a page (PostGraphile applies `offset` after the cursor).
    const controls = file.streams.find((s) => s.name === 'allControls')!;
    controls.document = controls.document.replace('after: $after,', 'after: $after, offset: 1,');
    await writeFile(join(dir(), 'streams.json'), JSON.stringify(file));
    const out = await sync(['--full-pass'], { SYNC_STREAMS_FILE: join(dir(), 'streams.json') });
    expect(out.code).toBe(1);
    expect(out.summary.streams.allControls).toMatchObject({ errorCode: 'listing_incomplete' });
    expect(out.summary.streams.allControls.error).toMatch(
      /allControls: a full pass read 198 records, but the tenant says it holds 200/,
    );
    // The child of a failed parent is not read on stale parents: it says why.
    expect(out.summary.streams.evidencesByControlId).toMatchObject({ errorCode: 'parent_unavailable' });
    expect(out.summary.streams.allPeople.error).toBeUndefined();
  });

  it('a server that does not list newest first as asked: the pass reads on to the end, says so, and the next is a full pass', async () => {
    await runCli(['discover', '--out', join(dir(), 'streams.json')], { env: env() });
    const file = JSON.parse(await readFile(join(dir(), 'streams.json'), 'utf8')) as {
      streams: StreamDefinition[];
    };
    const readings = file.streams.find((s) => s.name === 'allReadings')!;
    // A hand edit that asks the oldest first instead (as a server that ignores the ordering would answer).
    readings.incremental = { ...readings.incremental!, value: ['ID_ASC'] };
    await writeFile(join(dir(), 'streams.json'), JSON.stringify(file));
    const streams = { SYNC_STREAMS_FILE: join(dir(), 'streams.json'), SYNC_STREAMS: 'allReadings' };
    expect((await sync([], streams)).summary.streams.allReadings).toMatchObject({
      created: 100,
      pass: 'full',
    });
    await pgt.pg.query('UPDATE app.reading SET value = value + 1 WHERE id = 3');
    const second = await runCli(['sync', '--sink', `dir:${join(dir(), 'out')}`], { env: env(streams) });
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(
      'allReadings: the tenant did not list it newest first as asked: this pass read it to the end, and the next one reads it whole',
    );
    expect(second.stderr).toMatch(/allReadings \(incremental\): 100 read, 0 created, 1 updated/);
    const third = await sync([], streams);
    expect(third.summary.streams.allReadings).toMatchObject({ read: 100, updated: 0, pass: 'full' });
  });

  it('a child stream sliced after every page resumes where its parent and its relation stood: every child once', async () => {
    expect((await sync()).code).toBe(0); // the parent's pass, stored: the child is read for its keys
    const config = loadConfig(env());
    const access = createAccessLayer(config);
    const state = new FileSyncStateStore(join(dir(), 'sync-state'));
    const stored = await storedCatalog(
      new FileCatalogStore(join(dir(), 'sync-state')),
      pgt.settings.TENANT_NAME,
    );
    const child = stored!.streams.find((s) => s.name === 'evidencesByControlId')!;
    // Two a page: a parent with three children spans two pages, so slices also end inside a relation.
    const paged = { ...child, pageSize: 2 };
    const ctx = { tenant: pgt.settings.TENANT_NAME, state, sink: new DirectorySink(join(dir(), 'sliced')) };
    const run = await beginRun(ctx, { full: true, catalog: [paged] });
    let slices = 0;
    let result;
    do {
      result = await syncStream(access.graphql, paged, run, ctx, { deadlineMs: 0 });
      slices++;
      expect(result.ok).toBe(true);
    } while (!result.done);
    const lines = (await readFile(join(dir(), 'sliced', run.runId, 'evidencesByControlId.ndjson'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    const rows = await pgt.pg.query<{ id: string; control_id: number }>(
      'SELECT id, control_id FROM app.evidence',
    );
    expect(lines.map((c) => JSON.parse(c.id)).sort()).toEqual(rows.map((r) => [r.control_id, r.id]).sort());
    expect(result.counts.created).toBe(TENANT_ROWS.evidence);
    // One slice a page: 60 parents with children, six of them over two pages, and the quiet parents after them.
    expect(slices).toBeGreaterThanOrEqual(66);
  });

  it('20 000 rows: after 0.5 % changed the next sync reads under 10 % of the tenant; a full pass reports the deletions, a parent’s children with it', async () => {
    await pgt.pg.query(
      `INSERT INTO app.reading (sensor, value, updated_at)
         SELECT 'sensor-' || n % 20, n / 7.0, timestamptz '2026-01-01' + n * interval '1 minute'
           FROM generate_series(101, 20000) n`,
    );
    const first = await sync();
    expect([first.code, first.summary.streams.allReadings.created]).toEqual([0, 20_000]);
    await pgt.pg.query('UPDATE app.reading SET value = value + 1 WHERE id % 200 = 0'); // 100 rows, 0.5 %
    const second = await sync();
    const total = await tenantRows();
    expect(second.summary.streams.allReadings).toMatchObject({ updated: 100, pass: 'incremental' });
    expect(changed(second.summary)).toBe(100);
    console.log(`after 0.5 % changed: read ${read(second.summary)} of ${total} records`);
    expect(read(second.summary) / total).toBeLessThanOrEqual(0.1);

    await pgt.pg.query('DELETE FROM app.reading WHERE id BETWEEN 501 AND 510');
    await pgt.pg.query(`DELETE FROM app.kpi_value WHERE kpi_id = 2 AND period = '2026-03'`);
    await pgt.pg.query('DELETE FROM app.evidence WHERE control_id = 30');
    await pgt.pg.query('DELETE FROM app.control WHERE id = 30');
    const full = await sync(['--full-pass']);
    expect(full.code).toBe(0);
    expect(Object.fromEntries(Object.entries(full.summary.streams).map(([k, v]) => [k, v.deleted]))).toEqual({
      allAuditEntries: 0,
      allControls: 1,
      allKpiValues: 1,
      allOrganisations: 0,
      allPeople: 0,
      allReadings: 10,
      evidencesByControlId: 3,
    });
  });
});
