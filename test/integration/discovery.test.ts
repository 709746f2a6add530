import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { introspect } from '../../shared/catalog/introspect';
import { readStreamsFile } from '../../shared/streams';
import { accessFixture } from '../helpers/access';
import { loadOperations, variableProblems } from '../../shared/imports/operations';
import { runCli } from '../helpers/cli';
import { cliSandbox, type SyncSummary } from '../helpers/cli-sandbox';

/**
 * First contact with a tenant whose schema we did not write our streams for: the sandbox's `varied` shape pages
 * its six collections six ways (nodes and edges cursors, limit/offset without a total, first/skip with one,
 * numbered pages, one unpaged list), keys two of them by `uuid` and `key`, and forbids one field to M2M. Everything
 * goes through the CLI an operator runs: discover, sync, and the schema moving between runs.
 */

jest.setTimeout(120_000);

const RECORDS = 120;
const t = cliSandbox({ records: RECORDS, schema: 'varied' }, 'ti-discover-');
const { env, sync, delivered } = t;

const STREAMS = ['controlList', 'evidenceItems', 'staff', 'metrics', 'reportFeed', 'accounts'];
const COLLECTION: Record<string, string> = {
  controlList: 'controls',
  evidenceItems: 'evidence',
  staff: 'personnel',
  metrics: 'kpis',
  reportFeed: 'reports',
  accounts: 'users',
};

describe('discover against a schema we did not design for', () => {
  it('--operations proposes the tenant’s mutations as import operations that load and fit its schema', async () => {
    const file = join(t.dir, 'operations.json');
    const r = await runCli(['discover', '--operations', file], { env: env() });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/1 mutation \(setMetric\)/);
    const written = JSON.parse(await readFile(file, 'utf8'));
    expect(written).toEqual({
      operations: {
        setMetric:
          'mutation SetMetric($key: String!, $value: Float!) { setMetric(key: $key, value: $value) { __typename } }',
      },
    });
    const operations = await loadOperations(file, { builtIns: false });
    const op = operations.get('setMetric')!;
    expect(variableProblems(op, { key: 'm-0000001', value: 2 })).toEqual([]);
    expect(variableProblems(op, { key: 'm-0000001' })).toEqual(['$value: required']);
  });

  it('proposes one stream per collection with its paging, key and fields, names what it left out, and writes a streams file', async () => {
    const out = join(t.dir, 'streams.json');
    const r = await runCli(['discover', '--out', out], { env: env() });
    expect(r.code).toBe(0);
    // Plain words (on stderr, as every command's report): each stream with how it pages and what keys it.
    const words = r.stderr;
    expect(words).toContain('Discovered 6 streams');
    expect(words).toMatch(/controlList\n\s+paging:\s+cursor \(nodes, first\/after\)/);
    expect(words).toMatch(/evidenceItems\n\s+paging:\s+offset \(limit\/offset, no total\)/);
    expect(words).toMatch(/staff\n\s+paging:\s+numbered pages \(page\/perPage, with a total; from 1\)/);
    expect(words).toMatch(/metrics\n\s+paging:\s+one answer, no paging/);
    expect(words).toMatch(/reportFeed\n\s+paging:\s+offset \(first\/skip, with a total\)/);
    expect(words).toMatch(/accounts\n\s+paging:\s+cursor \(edges, first\/after\)/);
    expect(words).toMatch(/key:\s+uuid: no ID field.*check that it is unique/);
    expect(words).toMatch(/reads incrementally: \$changedSince against lastChanged/);
    // The field the M2M credential may not read is left out with the server's reason; the cycle is cut.
    expect(words).toMatch(/left out: email — the credential may not read it: Not authorized/);
    expect(words).toMatch(/left out: manager — a cycle/);
    // What is not a stream, and why: required arguments, single objects, scalar lists. Never a mutation.
    expect(words).toMatch(/account \(takes a required argument \(id\)\)/);
    expect(words).toMatch(/settings \(a single object/);
    expect(words).not.toContain('setMetric');

    const streams = readStreamsFile(out);
    expect(streams.map((s) => [s.name, s.pagination, s.idPath])).toEqual([
      ['controlList', 'cursor', 'id'],
      ['evidenceItems', 'offset', 'uuid'],
      ['staff', 'page', 'id'],
      ['metrics', 'none', 'key'],
      ['reportFeed', 'offset', 'id'],
      ['accounts', 'cursor', 'id'],
    ]);
    const accounts = streams.find((s) => s.name === 'accounts')!;
    expect(accounts.exclude).toContain('email');
    expect(accounts.document).not.toMatch(/\bemail\b/);
    // Nested lists of objects are read (roles), to the documented depth.
    expect(accounts.document).toMatch(/roles\s*\{[^}]*scopes/);

    const ops = async () => (await t.sb.hook('stats')).body.graphql.byOperation as Record<string, number>;
    const before = await ops();
    const json = await runCli(['discover', '--json'], { env: env() });
    expect(json.code).toBe(0);
    // Discovery reads under its own names (probes, proofs), never a run's: the tenant's logs and limits tell them apart.
    const read = Object.entries(await ops())
      .filter(([op, n]) => n > (before[op] ?? 0))
      .map(([op]) => op);
    expect(read.filter((op) => op.startsWith('Sync_'))).toEqual([]);
    expect(read).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Probe_/), expect.stringMatching(/^Prove_/)]),
    );
    const parsed = JSON.parse(json.stdout) as { streams: Array<{ name: string }>; proposals: unknown[] };
    expect(parsed.streams.map((p) => p.name)).toEqual(STREAMS);
    expect(parsed.proposals).toContainEqual(
      expect.objectContaining({
        stream: 'accounts',
        leftOut: expect.arrayContaining([expect.objectContaining({ field: 'email' })]),
      }),
    );
  });

  it('syncs every pagination kind exactly once; then changes, and deletions as each kind can know them', async () => {
    const first = await sync();
    expect(first.code).toBe(0);
    for (const name of STREAMS) {
      expect(first.summary.streams[name]).toMatchObject({ read: RECORDS, created: RECORDS, deleted: 0 });
      const changes = await delivered(first.summary.runId, name);
      // Exactly once: every record one creation, whatever the paging (evidence pages are capped at 40 by the
      // server although 50 were asked for; the offset moves by what came back).
      expect(new Set(changes.map((c) => c.id)).size).toBe(RECORDS);
      expect(changes.every((c) => c.kind === 'created')).toBe(true);
    }
    // The first run discovered the catalog and stored it: `discover --stored` shows it.
    const stored = await runCli(['discover', '--stored', '--json'], { env: env() });
    expect(stored.code).toBe(0);

    const mutated: Record<string, { created: string[]; updated: string[]; deleted: string[] }> = {};
    for (const name of STREAMS)
      mutated[name] = (
        await t.sb.hook('data/mutate', { collection: COLLECTION[name], creates: 2, updates: 3, deletes: 1 })
      ).body;
    const second = await sync();
    expect(second.code).toBe(0);
    for (const name of STREAMS)
      expect(second.summary.streams[name]).toMatchObject({ created: 2, updated: 3 });
    // Where a key is the record's id, the changes are exactly the mutated records.
    for (const name of ['controlList', 'staff', 'reportFeed', 'accounts']) {
      const changes = await delivered(second.summary.runId, name);
      const ids = (kind: string) =>
        changes
          .filter((c) => c.kind === kind)
          .map((c) => c.id)
          .sort();
      expect(ids('created')).toEqual([...mutated[name].created].sort());
      expect(ids('updated')).toEqual([...mutated[name].updated].sort());
    }
    // Deletions: a complete cursor listing, numbered pages and offset pages whose total held still, and a single
    // answer all see one at once; the incremental pass of controlList cannot (it reads only changes); offset
    // pages with no total to check against wait for a second pass that misses it too.
    expect(second.summary.streams.controlList).toMatchObject({ pass: 'incremental', deleted: 0 });
    expect(second.summary.streams.controlList.read).toBeLessThan(RECORDS / 2);
    for (const name of ['staff', 'metrics', 'reportFeed', 'accounts'])
      expect(second.summary.streams[name]).toMatchObject({ pass: 'full', deleted: 1 });
    expect(second.summary.streams.evidenceItems).toMatchObject({ deleted: 0 });

    const third = await sync(['--full-pass']);
    expect(third.code).toBe(0);
    expect(third.summary.streams.controlList).toMatchObject({ pass: 'full', deleted: 1, created: 0 });
    expect(third.summary.streams.evidenceItems).toMatchObject({ deleted: 1, created: 0, updated: 0 });
    const gone = (await delivered(third.summary.runId, 'controlList')).filter((c) => c.kind === 'deleted');
    expect(gone.map((c) => c.id)).toEqual(mutated.controlList.deleted);
    for (const name of ['staff', 'metrics', 'reportFeed', 'accounts'])
      expect(third.summary.streams[name]).toMatchObject({ created: 0, updated: 0, deleted: 0 });

    // And then nothing: every kind is quiet.
    const fourth = await sync(['--full-pass']);
    for (const name of STREAMS)
      expect(fourth.summary.streams[name]).toMatchObject({ created: 0, updated: 0, deleted: 0 });
  });

  it('a run that fails part-way through every stream resumes each kind from its checkpoint: each record once', async () => {
    // A GraphQL endpoint that fails (HTTP 503, past the retries) once the first pages are in.
    await sync([], {}).then((r) => expect(r.code).toBe(0)); // the catalog, stored
    await rm(join(t.dir, 'out'), { recursive: true, force: true });
    const full = ['--full'];
    await t.sb.hook('faults', { route: 'graphql', status: 503, count: 40, after: 8 });
    const broken = await sync(full);
    expect(broken.code).toBe(1);
    expect(broken.summary.ok).toBe(false);
    await t.sb.hook('faults/clear');
    const resumed = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`, '--json'], { env: env() });
    expect([resumed.code, resumed.stdout, resumed.stderr]).toEqual([
      0,
      expect.any(String),
      expect.any(String),
    ]);
    const summary = JSON.parse(resumed.stdout) as SyncSummary & { resumed: boolean };
    expect(summary).toMatchObject({ resumed: true, runId: broken.summary.runId });
    for (const name of STREAMS) {
      const changes = await delivered(summary.runId, name);
      expect(changes.length).toBe(RECORDS);
      expect(new Set(changes.map((c) => c.id)).size).toBe(RECORDS);
    }
  });
});

describe('the schema moves between runs', () => {
  it('under report, a stream whose field is gone fails by name and the others run; an added field is named', async () => {
    expect((await sync()).code).toBe(0);
    expect(
      (await t.sb.hook('schema/fields', { type: 'StaffMember', field: 'team', action: 'remove' })).status,
    ).toBe(200);
    await t.sb.hook('schema/fields', {
      type: 'Report',
      field: 'audience',
      action: 'add',
      fieldType: 'String',
    });
    const r = await sync();
    expect(r.code).toBe(1);
    expect(r.summary.streams.staff.error).toMatch(/no longer has team/);
    expect(r.summary.streams.staff.error).toContain('tenant-integrations discover');
    for (const name of STREAMS.filter((s) => s !== 'staff'))
      expect(r.summary.streams[name].error).toBeUndefined();
    expect(r.summary.schema?.added).toEqual({ reportFeed: ['audience'] });
    // The plain output says the same to a person.
    const text = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`], { env: env() });
    expect(text.stderr).toMatch(/staff.*no longer has team/);
    expect(text.stderr).toMatch(/reportFeed: the tenant has fields this stream does not read: audience/);
  });

  it('under propagate, both changes are adopted and stored: the next run reads the new shape', async () => {
    expect((await sync()).code).toBe(0);
    await t.sb.hook('schema/fields', { type: 'StaffMember', field: 'team', action: 'remove' });
    await t.sb.hook('schema/fields', {
      type: 'Report',
      field: 'audience',
      action: 'add',
      fieldType: 'String',
    });
    const r = await sync([], { SYNC_SCHEMA_CHANGES: 'propagate' });
    expect(r.code).toBe(0);
    expect(r.summary.schema?.changes).toEqual(
      expect.arrayContaining([
        { stream: 'staff', added: [], removed: ['team'] },
        { stream: 'reportFeed', added: ['audience'], removed: [] },
      ]),
    );
    // Each record's content changed (a field gone, a field new): one update each, once.
    expect(r.summary.streams.staff).toMatchObject({ updated: RECORDS });
    expect(r.summary.streams.reportFeed).toMatchObject({ updated: RECORDS });
    const reports = await delivered(r.summary.runId, 'reportFeed');
    expect((reports[0].record as Record<string, unknown>).audience).toEqual(expect.any(String));
    // Stored: a run under report now finds nothing to say.
    const next = await sync();
    expect(next.code).toBe(0);
    expect(next.summary.schema?.added ?? {}).toEqual({});
    expect(next.summary.streams.staff).toMatchObject({ updated: 0 });
  });

  it('the sandbox refuses an edit that names no such type or field, or a field that exists', async () => {
    expect((await t.sb.hook('schema/fields', { type: 'Nope', field: 'x', action: 'remove' })).status).toBe(
      400,
    );
    expect(
      (await t.sb.hook('schema/fields', { type: 'Metric', field: 'nope', action: 'remove' })).status,
    ).toBe(400);
    expect(
      (
        await t.sb.hook('schema/fields', {
          type: 'Metric',
          field: 'unit',
          action: 'add',
          fieldType: 'String',
        })
      ).status,
    ).toBe(400);
  });
});

describe('a tenant that refuses introspection', () => {
  it('discover and a first sync say so and name SYNC_STREAMS_FILE; a streams file works, and drift shows on the first page', async () => {
    // A file written while introspection was allowed (as a colleague with access might have).
    const file = join(t.dir, 'streams.json');
    expect((await runCli(['discover', '--out', file], { env: env() })).code).toBe(0);

    await t.sb.hook('schema/introspection', { enabled: false });
    const d = await runCli(['discover'], { env: env() });
    expect(d.code).toBe(2);
    expect(d.stderr).toMatch(/refuses introspection|introspection.*refused/i);
    expect(d.stderr).toContain('SYNC_STREAMS_FILE');

    const s = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`], { env: env() });
    expect(s.code).toBe(2);
    expect(s.stderr).toContain('SYNC_STREAMS_FILE');
    expect(await readdir(t.dir)).not.toContain('out');

    const ok = await sync([], { SYNC_STREAMS_FILE: file });
    expect(ok.code).toBe(0);
    for (const name of STREAMS) expect(ok.summary.streams[name]).toMatchObject({ created: RECORDS });

    // Without the schema, a field gone shows as the first page's error: the stream fails by name, nothing lost.
    await t.sb.hook('schema/fields', { type: 'Metric', field: 'unit', action: 'remove' });
    const drift = await sync([], { SYNC_STREAMS_FILE: file });
    expect(drift.code).toBe(1);
    expect(drift.summary.streams.metrics.error).toMatch(/unit/);
    expect(drift.summary.streams.staff.error).toBeUndefined();
  });

  it('a bad streams file is refused before any run, naming the stream and what is wrong', async () => {
    const file = join(t.dir, 'bad.json');
    const cases: Array<[unknown, RegExp]> = [
      [{ streams: [{ name: 'x', document: 'query X { a { id } }', pagination: 'scroll' }] }, /x.*pagination/],
      [
        {
          streams: [
            {
              name: 'metrics',
              pagination: 'none',
              document: 'query M { metrics { key unit } }',
              paths: { records: 'metrics' },
              idPath: 'key',
              incremental: { variable: 'since', field: 'unit' },
            },
          ],
        },
        /metrics.*\$since/,
      ],
      [
        {
          streams: [
            {
              name: 'metrics',
              pagination: 'none',
              document: 'query M { metrics { key unit } }',
              paths: { records: 'metricz' },
              idPath: 'key',
            },
          ],
        },
        /metrics.*metricz/,
      ],
    ];
    for (const [content, message] of cases) {
      await writeFile(file, JSON.stringify(content));
      const r = await runCli(['sync', '--sink', `dir:${join(t.dir, 'out')}`], {
        env: env({ SYNC_STREAMS_FILE: file }),
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });

  it('a schema past the bounds (answer size, type count, fields per type) is refused by name, never read whole', async () => {
    const a = await accessFixture(t.sb);
    try {
      await expect(introspect(a.graphql, { limits: { bytes: 4_000 } })).rejects.toThrow(
        /larger than 4000 bytes.*SYNC_STREAMS_FILE/,
      );
      await expect(introspect(a.graphql, { limits: { types: 10 } })).rejects.toThrow(
        /types, more than 10.*SYNC_STREAMS_FILE/,
      );
      await expect(introspect(a.graphql, { limits: { fieldsPerType: 3 } })).rejects.toThrow(/more than 3/);
      // Within the bounds, the same schema reads.
      expect((await introspect(a.graphql)).getQueryType()?.getFields().staff).toBeDefined();
    } finally {
      await a.cleanup();
    }
  });
});
