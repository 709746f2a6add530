import { buildSchema, parse, validate } from 'graphql';
import { proposeCatalog } from '../../shared/catalog/discover';
import { incrementalVariables } from '../../shared/streams/incremental';

/*
 * Every dialect a tenant's server framework may speak for "changed since" and "newest first" (docs/sync.md,
 * "Incremental passes"), each as the smallest schema its framework generates: discovery finds every candidate, in
 * order of preference, and each candidate's document is one the schema accepts. Which candidate a tenant keeps is
 * proved against the server (test/integration/incremental-dialects.test.ts, and Graphene-Django itself in the
 * conformance suite).
 */

const RELAY = /* GraphQL */ `
  type PageInfo {
    hasNextPage: Boolean!
    endCursor: String
  }
`;
const conn = (record: string) => /* GraphQL */ `
  type ${record}Edge {
    node: ${record}
    cursor: String!
  }
  type ${record}Connection {
    pageInfo: PageInfo!
    edges: [${record}Edge]!
  }
`;

const DIALECTS: Record<string, { sdl: string; said: string[]; paging?: string }> = {
  'Graphene-Django + django-filter': {
    sdl: `scalar DateTime
      type Inspection { id: ID! title: String! updatedAt: DateTime! }
      ${RELAY} ${conn('Inspection')}
      type Query {
        allInspections(offset: Int, before: String, after: String, first: Int, last: Int, title: String,
          updatedAt: DateTime, updatedAt_Gt: DateTime, updatedAt_Gte: DateTime, updatedAt_Lt: DateTime,
          orderBy: String): InspectionConnection
      }`,
    said: [
      'updatedAt_Gte: $since',
      'updatedAt_Gt: $since',
      'orderBy: "-updated_at"',
      'orderBy: "-updatedAt"',
    ],
  },
  'Hot Chocolate': {
    sdl: `scalar DateTime
      input DateTimeOperationFilterInput { eq: DateTime neq: DateTime gt: DateTime ngt: DateTime gte: DateTime lt: DateTime }
      input IntOperationFilterInput { eq: Int gt: Int }
      input InspectionFilterInput { and: [InspectionFilterInput!] or: [InspectionFilterInput!] id: IntOperationFilterInput updatedAt: DateTimeOperationFilterInput }
      enum SortEnumType { ASC DESC }
      input InspectionSortInput { id: SortEnumType updatedAt: SortEnumType }
      type Inspection { id: Int! title: String! updatedAt: DateTime! }
      ${RELAY} ${conn('Inspection')}
      type Query {
        inspections(first: Int, after: String, last: Int, before: String, where: InspectionFilterInput,
          order: [InspectionSortInput!]): InspectionConnection
      }`,
    said: [
      'where: {"updatedAt":{"gte":$since}}',
      'where: {"updatedAt":{"gt":$since}}',
      'order: {updatedAt: DESC}',
    ],
  },
  'Strawberry-Django': {
    sdl: `scalar DateTime
      input DatetimeFilterLookup { exact: DateTime gt: DateTime gte: DateTime lt: DateTime lte: DateTime isNull: Boolean }
      input InspectionFilter { id: ID updatedAt: DatetimeFilterLookup AND: InspectionFilter OR: InspectionFilter }
      enum Ordering { ASC ASC_NULLS_FIRST ASC_NULLS_LAST DESC DESC_NULLS_FIRST DESC_NULLS_LAST }
      input InspectionOrder { id: Ordering updatedAt: Ordering }
      type Inspection { id: ID! title: String! updatedAt: DateTime! }
      ${RELAY} ${conn('Inspection')}
      type Query { inspections(filters: InspectionFilter, order: InspectionOrder, first: Int, after: String): InspectionConnection! }`,
    said: [
      'filters: {"updatedAt":{"gte":$since}}',
      'filters: {"updatedAt":{"gt":$since}}',
      'order: {updatedAt: DESC}',
    ],
  },
  'Prisma (Nexus, Pothos)': {
    sdl: `scalar DateTime
      input DateTimeFilter { equals: DateTime gt: DateTime gte: DateTime lt: DateTime }
      input InspectionWhereInput { id: String updatedAt: DateTimeFilter }
      input InspectionWhereUniqueInput { id: String }
      enum SortOrder { asc desc }
      input InspectionOrderByWithRelationInput { id: SortOrder updatedAt: SortOrder }
      type Inspection { id: String! title: String! updatedAt: DateTime! }
      type Query {
        inspections(where: InspectionWhereInput, orderBy: [InspectionOrderByWithRelationInput!],
          cursor: InspectionWhereUniqueInput, take: Int, skip: Int): [Inspection!]!
      }`,
    said: [
      'where: {"updatedAt":{"gte":$since}}',
      'where: {"updatedAt":{"gt":$since}}',
      'orderBy: {updatedAt: desc}',
    ],
    paging: 'offset',
  },
  'AWS AppSync / Amplify': {
    sdl: `input ModelStringInput { ne: String eq: String le: String lt: String ge: String gt: String contains: String between: [String] }
      input ModelInspectionFilterInput { id: ModelStringInput updatedAt: ModelStringInput and: [ModelInspectionFilterInput] }
      type Inspection { id: ID! title: String! updatedAt: AWSDateTime! }
      scalar AWSDateTime
      type ModelInspectionConnection { items: [Inspection]! nextToken: String }
      type Query { listInspections(filter: ModelInspectionFilterInput, limit: Int, nextToken: String): ModelInspectionConnection }`,
    said: ['filter: {"updatedAt":{"ge":$since}}', 'filter: {"updatedAt":{"gt":$since}}'],
    paging: 'token',
  },
  'GitHub-style': {
    sdl: `scalar DateTime
      input IssueFilters { since: DateTime states: [String!] }
      enum IssueOrderField { CREATED_AT UPDATED_AT COMMENTS }
      enum OrderDirection { ASC DESC }
      input IssueOrder { field: IssueOrderField! direction: OrderDirection! }
      type Issue { id: ID! title: String! updatedAt: DateTime! }
      ${RELAY} ${conn('Issue')}
      type Query { issues(first: Int, after: String, filterBy: IssueFilters, orderBy: IssueOrder): IssueConnection! }`,
    said: ['filterBy: {"since":$since}', 'orderBy: {field: UPDATED_AT, direction: DESC}'],
  },
  'Shopify-style': {
    sdl: `scalar DateTime
      enum OrderSortKeys { CREATED_AT UPDATED_AT ID }
      type Order { id: ID! name: String! updatedAt: DateTime! }
      ${RELAY} ${conn('Order')}
      type Query { orders(first: Int, after: String, query: String, sortKey: OrderSortKeys = ID, reverse: Boolean = false): OrderConnection! }`,
    said: ['query: "updated_at:>=\'$since\'"', 'sortKey: UPDATED_AT, reverse: true'],
  },
};

describe('incremental dialects: found by rule, every candidate a valid document', () => {
  for (const [name, d] of Object.entries(DIALECTS))
    it(name, () => {
      const schema = buildSchema(d.sdl);
      const [p] = proposeCatalog(schema).streams;
      expect(p).toBeDefined();
      if (d.paging) expect(p.stream.pagination).toBe(d.paging);
      const ways = [{ stream: p.stream, said: p.said }, ...(p.alternatives ?? [])];
      expect(ways.map((w) => w.said)).toEqual([...d.said, undefined]);
      for (const w of ways) {
        expect([w.said, validate(schema, parse(w.stream.document)).map((e) => e.message)]).toEqual([
          w.said,
          [],
        ]);
        // What an incremental pass sends is what the schema takes.
        if (w.stream.incremental) {
          const vars = incrementalVariables(w.stream.incremental, '2026-01-01T00:00:00.000Z');
          expect(JSON.stringify(vars)).not.toContain('$since');
        }
      }
      // The last way reads whole: no incremental argument in its document.
      expect(ways[ways.length - 1].stream.incremental).toBeUndefined();
    });

  it('a search string carries the time inside it; a sort key carries its flag beside it', () => {
    const [p] = proposeCatalog(buildSchema(DIALECTS['Shopify-style'].sdl)).streams;
    expect(incrementalVariables(p.stream.incremental!, '2026-01-01T00:00:00.000Z')).toEqual({
      query: "updated_at:>='2026-01-01T00:00:00.000Z'",
    });
    const order = p.alternatives![0].stream;
    expect(order.incremental).toMatchObject({
      variable: 'sortKey',
      kind: 'order',
      value: 'UPDATED_AT',
      also: { reverse: true },
    });
    expect(incrementalVariables(order.incremental!, 'x')).toEqual({ sortKey: 'UPDATED_AT', reverse: true });
    expect(order.document).toContain('$reverse: Boolean');
  });

  it('no change field selected: no candidate, read whole', () => {
    const schema = buildSchema(`scalar DateTime ${RELAY} ${conn('Thing')}
      type Thing { id: ID! title: String! }
      type Query { things(first: Int, after: String, updatedSince: DateTime): ThingConnection! }`);
    const [p] = proposeCatalog(schema).streams;
    expect([p.stream.incremental, p.alternatives]).toEqual([undefined, undefined]);
  });
});

describe('a cap on streams', () => {
  it('25 600 possible child streams: discovery proposes the cap, names the first over it and counts the rest', () => {
    // 160 root collections whose records each have 160 to-many relations no root lists: 25 600 child streams, each
    // read once per parent record — a schema of about a megabyte.
    const rels = Array.from({ length: 160 }, (_, i) => `rel${i}(limit: Int, offset: Int): [Leaf${i}!]!`).join(
      ' ',
    );
    const leaves = Array.from({ length: 160 }, (_, i) => `type Leaf${i} { id: ID! name: String! }`).join(
      '\n',
    );
    const roots = Array.from(
      { length: 160 },
      (_, i) => `type Root${i} { id: ID! name: String! ${rels} }`,
    ).join('\n');
    const query = Array.from(
      { length: 160 },
      (_, i) => `roots${i}(limit: Int, offset: Int): [Root${i}!]! root${i}(id: ID!): Root${i}`,
    ).join(' ');
    const schema = buildSchema(`${leaves}\n${roots}\ntype Query { ${query} }`);
    const found = proposeCatalog(schema);
    expect(found.streams.length).toBe(200);
    // Root collections first: all 160, then 40 child streams.
    expect(found.streams.filter((p) => !p.stream.parent).length).toBe(160);
    const over = found.skipped.filter((s) => s.reason.includes('SYNC_MAX_STREAMS'));
    expect(over.length).toBe(21); // twenty by name, then the rest counted
    expect(over[0].field).toMatch(/^roots\d+\.rel\d+ \(a child stream\)$/);
    expect(over[20].field).toBe(`${25_760 - 200 - 20} more`);
    expect(proposeCatalog(schema, { maxStreams: 10 }).streams.map((p) => p.stream.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `roots${i}`),
    );
  });
});
