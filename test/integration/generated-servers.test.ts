import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StreamDefinition } from '../../shared/streams';
import { runCli } from '../helpers/cli';
import { cliTenant } from '../helpers/cli-tenant';
import { startJsonGraphqlTenant, type JsonGraphqlTenant } from '../helpers/json-graphql';
import { startPostgraphileTenant, type PostgraphileTenant } from '../helpers/postgraphile';

/**
 * Two more conventions of servers generated from data, nobody here wrote either: PostGraphile with its
 * connection-filter plugin ("changed since" said through `filter: {updatedAt: {greaterThanOrEqualTo}}`), and
 * json-graphql-server (pages counted from 0 with no default, the count a sibling root field `_allXMeta { count }`,
 * `filter: {updated_at_gte}`). Through the CLI.
 */

jest.setTimeout(240_000);

const t = cliTenant('ti-gen-');
const { env, sync, delivered } = t;
const dir = () => t.dir;
const discovered = async () => {
  const r = await runCli(['discover', '--json'], { env: env() });
  expect(r.code).toBe(0);
  return Object.fromEntries(
    (JSON.parse(r.stdout) as { streams: StreamDefinition[] }).streams.map((s) => [s.name, s]),
  );
};

describe('PostGraphile with the connection-filter plugin', () => {
  let pgt: PostgraphileTenant;
  beforeAll(async () => {
    pgt = await startPostgraphileTenant({ plugins: ['postgraphile-plugin-connection-filter'] });
    t.settings = pgt.settings;
    t.clientSecret = pgt.clientSecret;
  });
  afterAll(() => pgt?.stop());

  it('reads "changed since" through the filter: an incremental pass reads what changed and the overlap, no more', async () => {
    const by = await discovered();
    expect(by.allReadings.incremental).toEqual({
      variable: 'filter',
      field: 'updatedAt',
      kind: 'filter',
      value: { updatedAt: { greaterThanOrEqualTo: '$since' } },
    });
    const first = await sync();
    expect([first.code, first.summary.streams.allReadings.created]).toEqual([0, 100]);
    await pgt.pg.query('UPDATE app.reading SET value = -1 WHERE id IN (7, 8)');
    const second = await sync();
    expect(second.summary.streams.allReadings).toMatchObject({ pass: 'incremental', updated: 2, created: 0 });
    // The two changed, and those stamped within the overlap (five minutes) of the last mark: a minute apart, six.
    expect(second.summary.streams.allReadings.read).toBeLessThanOrEqual(2 + 6);
    const changes = await delivered(second.summary.runId, 'allReadings');
    expect(changes.map((c) => [c.kind, c.id]).sort()).toEqual([
      ['updated', '7'],
      ['updated', '8'],
    ]);
  });
});

describe('json-graphql-server: pages from 0, a count beside the list', () => {
  let jgt: JsonGraphqlTenant;
  beforeAll(async () => {
    jgt = await startJsonGraphqlTenant();
    t.settings = jgt.settings;
    t.clientSecret = jgt.sb.clientSecret;
  });
  afterAll(() => jgt?.stop());

  it('discover finds where pages start and the sibling count; a sync delivers every record, the first page and the small list too', async () => {
    const by = await discovered();
    expect(Object.keys(by).sort()).toEqual(['allPosts', 'allTags', 'allUsers']);
    expect(by.allPosts.paths).toMatchObject({ firstPage: 0, total: '_allPostsMeta.count' });
    expect(by.allPosts.document).toContain('_allPostsMeta(filter: $filter) { count }');
    expect(by.allPosts.incremental).toEqual({
      variable: 'filter',
      field: 'updated_at',
      kind: 'filter',
      value: { updated_at_gte: '$since' },
    });
    // A user's posts are to-many: left out of the user (read as allPosts); a post's user is to-one: kept.
    expect(by.allUsers.document).not.toContain('Posts');
    expect(by.allPosts.document).toMatch(/User \{ id name updated_at \}/);

    const first = await sync();
    expect([first.code, first.summary.ok]).toEqual([0, true]);
    expect(Object.fromEntries(Object.entries(first.summary.streams).map(([k, v]) => [k, v.created]))).toEqual(
      { allPosts: 1234, allTags: 3, allUsers: 57 },
    );
    const posts = await delivered(first.summary.runId, 'allPosts');
    expect(new Set(posts.map((c) => c.id))).toEqual(new Set(jgt.data.posts.map((p) => String(p.id))));

    const post = jgt.data.posts[9];
    Object.assign(post, { title: 'Edited', updated_at: new Date().toISOString() });
    const second = await sync();
    expect(second.summary.streams.allPosts).toMatchObject({ pass: 'incremental', updated: 1, created: 0 });
    expect(second.summary.streams.allPosts.read).toBeLessThan(20);
  });

  it('a streams file that reads pages from 1 (as an earlier version guessed): the lost first pages fail their streams by name', async () => {
    const r = await runCli(['discover', '--out', join(dir(), 'streams.json')], { env: env() });
    expect(r.code).toBe(0);
    const file = JSON.parse(await readFile(join(dir(), 'streams.json'), 'utf8')) as {
      streams: StreamDefinition[];
    };
    for (const s of file.streams) if (s.pagination === 'page') s.paths.firstPage = 1;
    await writeFile(join(dir(), 'streams.json'), JSON.stringify(file));
    const out = await sync([], { SYNC_STREAMS_FILE: join(dir(), 'streams.json') });
    expect([out.code, out.summary.ok]).toEqual([1, false]);
    const s = out.summary.streams;
    expect([s.allPosts.errorCode, s.allTags.errorCode, s.allUsers.errorCode]).toEqual([
      'listing_incomplete',
      'listing_incomplete',
      'listing_incomplete',
    ]);
    expect(s.allPosts.error).toContain(
      'stream allPosts: a full pass read 1134 records, but the tenant says it holds 1234',
    );
    expect(s.allTags.error).toContain(
      'stream allTags: a full pass read 0 records, but the tenant says it holds 3',
    );
  });
});
