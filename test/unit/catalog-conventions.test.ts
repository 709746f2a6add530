import { buildSchema, parse, validate } from 'graphql';
import { proposeCatalog } from '../../shared/catalog/discover';
import { parseStreams, parentProblem, type StreamDefinition } from '../../shared/streams';
import { incrementalVariables, NewestFirst } from '../../shared/sync/incremental';
import { readiness } from '../../shared/sync/order';
import { parsePosition } from '../../shared/graphql/children';

/**
 * The conventions of generated GraphQL servers, each as the smallest schema that shows it — Hasura's `_by_pk` and
 * `where`/`order_by`, PostGraphile's connections and `nodeId`, json-graphql-server's sibling `_allXMeta` — proposed
 * as streams whose documents the schema accepts. (The servers themselves: test/integration/postgraphile-tenant and
 * generated-servers.)
 */

const propose = (sdl: string) => {
  const schema = buildSchema(sdl);
  const found = proposeCatalog(schema);
  for (const p of found.streams)
    expect([p.stream.name, validate(schema, parse(p.stream.document)).map((e) => e.message)]).toEqual([
      p.stream.name,
      [],
    ]);
  return { found, by: Object.fromEntries(found.streams.map((p) => [p.stream.name, p])) };
};

const HASURA = /* GraphQL */ `
  scalar uuid
  scalar timestamptz
  enum order_by {
    asc
    desc
  }
  input timestamptz_comparison_exp {
    _gt: timestamptz
    _gte: timestamptz
    _lt: timestamptz
  }
  input kpi_values_bool_exp {
    updated_at: timestamptz_comparison_exp
  }
  input kpi_values_order_by {
    updated_at: order_by
    kpi_id: order_by
  }
  input controls_order_by {
    updated_at: order_by
  }
  type controls {
    id: uuid!
    title: String!
    updated_at: timestamptz!
    owner: people
    evidence(limit: Int, offset: Int): [evidence!]!
  }
  type people {
    person_id: Int!
    name: String!
    controls(limit: Int, offset: Int): [controls!]!
  }
  type evidence {
    id: uuid!
    note: String!
  }
  type kpi_values {
    kpi_id: Int!
    period: String!
    value: Float!
    updated_at: timestamptz!
  }
  type kpi_values_aggregate_fields {
    count: Int!
  }
  type kpi_values_aggregate {
    aggregate: kpi_values_aggregate_fields
  }
  type report_section {
    heading: String!
    body: String!
  }
  type reports {
    id: Int!
    sections: [report_section!]!
  }
  type Query {
    controls(limit: Int, offset: Int, order_by: [controls_order_by!]): [controls!]!
    controls_by_pk(id: uuid!): controls
    people(limit: Int, offset: Int): [people!]!
    people_by_pk(person_id: Int!): people
    kpi_values(
      limit: Int
      offset: Int
      where: kpi_values_bool_exp
      order_by: [kpi_values_order_by!]
    ): [kpi_values!]!
    kpi_values_aggregate(where: kpi_values_bool_exp): kpi_values_aggregate!
    kpi_values_by_pk(kpi_id: Int!, period: String!): kpi_values
    reports(limit: Int, offset: Int): [reports!]!
  }
`;

describe('discovery: conventions of generated servers', () => {
  it('Hasura: keys from the lookup by primary key (one or two columns), a uuid id, the filter and the ordering, the aggregate count', () => {
    const { by } = propose(HASURA);
    expect(by.controls.stream.idPath).toBe('id');
    expect(by.people.stream.idPath).toBe('person_id');
    expect(by.kpi_values.stream.idPath).toEqual(['kpi_id', 'period']);
    expect(by.kpi_values.key).toContain('kpi_id + period');
    // A filter is preferred to an ordering; the count beside the list counts what the filter passes.
    expect(by.kpi_values.stream.incremental).toEqual({
      variable: 'where',
      field: 'updated_at',
      kind: 'filter',
      value: { updated_at: { _gte: '$since' } },
    });
    expect(by.kpi_values.stream.document).toContain(
      'kpi_values_aggregate(where: $where) { aggregate { count } }',
    );
    expect(by.kpi_values.stream.paths).toMatchObject({ total: 'kpi_values_aggregate.aggregate.count' });
    expect(by.controls.stream.incremental).toEqual({
      variable: 'order_by',
      field: 'updated_at',
      kind: 'order',
      value: [{ updated_at: 'desc' }],
    });
  });

  it('a record is its own fields: to-one kept, to-many (paged, a list of keyed records) left out naming where it is read, value lists kept', () => {
    const { by } = propose(HASURA);
    expect(by.controls.stream.document).toContain('owner { person_id name }');
    expect(by.controls.stream.document).not.toMatch(/evidence\(|controls \{ id/);
    expect(by.people.leftOut).toContainEqual({
      field: 'controls',
      reason: 'to-many (paged) — read as stream controls',
    });
    expect(by.reports.stream.document).toContain('sections { heading body }');
  });

  it('a to-many relation whose records no root field lists becomes a child stream, read through the parent’s lookup, keyed by (parent, own key)', () => {
    const { by } = propose(HASURA);
    const child = by.evidence;
    expect(child.stream.parent).toEqual({
      stream: 'controls',
      key: 'id',
      variable: 'parentKey',
      as: 'parentKey',
    });
    expect(child.stream.idPath).toEqual(['parentKey', 'id']);
    expect(child.stream.document).toMatch(
      /^query Sync_evidence\(\$parentKey: uuid!, \$limit: Int, \$offset: Int\) \{ controls_by_pk\(id: \$parentKey\) \{ evidence\(limit: \$limit, offset: \$offset\)/,
    );
    expect(child.stream.paths.records).toBe('controls_by_pk.evidence');
    expect(by.controls.leftOut).toContainEqual({
      field: 'evidence',
      reason: 'to-many (paged) — read as child stream evidence',
    });
  });

  it('PostGraphile: the Node id is the key only without a better one; a child does not repeat its parent', () => {
    const { by } = propose(/* GraphQL */ `
      scalar Cursor
      scalar UUID
      interface Node {
        nodeId: ID!
      }
      type PageInfo {
        hasNextPage: Boolean!
        endCursor: Cursor
      }
      type Tag implements Node {
        nodeId: ID!
        label: String!
      }
      type TagsConnection {
        nodes: [Tag]!
        pageInfo: PageInfo!
        totalCount: Int!
      }
      type Note implements Node {
        nodeId: ID!
        id: UUID!
        text: String!
        postByPostId: Post
      }
      type NotesConnection {
        nodes: [Note]!
        pageInfo: PageInfo!
        totalCount: Int!
      }
      type Post implements Node {
        nodeId: ID!
        id: Int!
        notesByPostId(first: Int, after: Cursor): NotesConnection!
      }
      type PostsConnection {
        nodes: [Post]!
        pageInfo: PageInfo!
        totalCount: Int!
      }
      type Query {
        allTags(first: Int, after: Cursor): TagsConnection
        allPosts(first: Int, after: Cursor): PostsConnection
        postById(id: Int!): Post
      }
    `);
    expect(by.allTags.stream.idPath).toBe('nodeId');
    expect(by.allTags.key).toMatch(/global id/);
    expect(by.allPosts.stream.idPath).toBe('id');
    expect(by.notesByPostId.stream.idPath).toEqual(['parentKey', 'id']);
    expect(by.notesByPostId.stream.document).not.toContain('postByPostId');
    expect(by.notesByPostId.leftOut).toContainEqual({
      field: 'postByPostId',
      reason: "its parent (read as stream allPosts): the parent's key is carried instead",
    });
    // The total is asked on the first page only.
    expect(by.allTags.stream.document).toContain('totalCount @include(if: $withTotal)');
  });

  it('numbered pages without a default: where they start is left to the probe; with a default of 0 it is 0', () => {
    const { found } = propose(/* GraphQL */ `
      type Item {
        id: ID!
      }
      type Query {
        a(page: Int, perPage: Int): [Item]
        b(page: Int = 0, perPage: Int): [Item]
      }
    `);
    const [a, b] = found.streams;
    expect([a.firstPageUnknown, b.firstPageUnknown, b.stream.paths]).toEqual([
      true,
      undefined,
      expect.objectContaining({ firstPage: 0 }),
    ]);
  });
});

describe('incremental kinds', () => {
  it('fills "$since" into a filter at any depth, passes the ordering as it is, the time itself for since', () => {
    expect(
      incrementalVariables(
        { variable: 'where', field: 'u', kind: 'filter', value: { _and: [{ u: { _gte: '$since' } }] } },
        'T',
      ),
    ).toEqual({ where: { _and: [{ u: { _gte: 'T' } }] } });
    expect(
      incrementalVariables({ variable: 'o', field: 'u', kind: 'order', value: ['U_DESC'] }, 'T'),
    ).toEqual({
      o: ['U_DESC'],
    });
    expect(incrementalVariables({ variable: 's', field: 'u' }, 'T')).toEqual({ s: 'T' });
  });

  it('newest first: stops after the page that reaches the mark; a record newer than the one before breaks the order', () => {
    const at = (s: string) => ({ u: `2026-01-01T00:${s}:00Z` });
    const n = new NewestFirst('s', 'u', '2026-01-01T00:30:00Z');
    expect(n.page([at('50'), at('40')])).toBe(false);
    expect(n.page([at('35'), at('29')])).toBe(true);
    const broken = new NewestFirst('s', 'u', '2026-01-01T00:30:00Z');
    expect(broken.page([at('10'), at('50')])).toBe(false);
    expect(broken.broken).toBe(true);
    expect(() => new NewestFirst('s', 'u', '2026-01-01T00:30:00Z').page([{ u: 'yesterday' }])).toThrow(
      /not a date-time/,
    );
  });
});

describe('child streams', () => {
  const stream = (over: Partial<StreamDefinition> & { name: string }) => ({
    document:
      'query($parentKey: Int!, $first: Int, $after: String) { p(id: $parentKey) { c(first: $first, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } } }',
    pagination: 'cursor',
    paths: {
      records: 'p.c.nodes',
      hasNextPage: 'p.c.pageInfo.hasNextPage',
      endCursor: 'p.c.pageInfo.endCursor',
    },
    ...over,
  });
  it('a streams file names a parent that is another root stream keyed by the field the child passes, else says what to fix', () => {
    const parentDoc =
      'query($first: Int, $after: String) { ps(first: $first, after: $after) { nodes { id code } pageInfo { hasNextPage endCursor } } }';
    const parentPaths = {
      records: 'ps.nodes',
      hasNextPage: 'ps.pageInfo.hasNextPage',
      endCursor: 'ps.pageInfo.endCursor',
    };
    const child = stream({
      name: 'c',
      idPath: ['parentKey', 'id'],
      parent: { stream: 'ps', key: 'id', variable: 'parentKey', as: 'parentKey' },
    } as never);
    const ok = parseStreams(
      { streams: [{ name: 'ps', document: parentDoc, pagination: 'cursor', paths: parentPaths }, child] },
      'f.json',
    );
    expect(ok.map((s) => s.name)).toEqual(['ps', 'c']);
    expect(() =>
      parseStreams(
        {
          streams: [
            { name: 'ps', document: parentDoc, pagination: 'cursor', paths: parentPaths, idPath: 'code' },
            child,
          ],
        },
        'f.json',
      ),
    ).toThrow(/stream c: parent: ps is keyed by code, not by id/);
    expect(() => parseStreams({ streams: [child] }, 'f.json')).toThrow(
      /stream c: parent: ps is not another stream here/,
    );
    expect(parentProblem(ok[1], [ok[1]])).toMatch(/not another stream/);
  });

  it('a child waits for its parent in the run, fails when the parent failed, and is read when the parent is outside the run', () => {
    const parents = { c: 'p' };
    const inRun = new Set(['p', 'c']);
    expect(readiness('c', parents, {}, inRun)).toBe('wait');
    expect(readiness('c', parents, { p: { ok: true, done: false } }, inRun)).toBe('wait');
    expect(readiness('c', parents, { p: { ok: true, done: true } }, inRun)).toBe('ready');
    expect(readiness('c', parents, { p: { ok: false, done: false } }, inRun)).toMatchObject({
      ok: false,
      errorCode: 'parent_unavailable',
    });
    expect(readiness('c', parents, {}, new Set(['c']))).toBe('ready');
  });

  it('a child listing’s position is its parent’s place and the relation’s cursor; anything else is refused', () => {
    expect(parsePosition(null)).toEqual({ p: 0, c: null });
    expect(parsePosition('{"p":12,"c":"abc"}')).toEqual({ p: 12, c: 'abc' });
    expect(() => parsePosition('12')).toThrow(/not a child stream's position/);
  });
});
