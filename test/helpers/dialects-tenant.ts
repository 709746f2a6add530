/* eslint-disable @typescript-eslint/no-explicit-any -- a resolver's arguments are typed by the schema above, not here */
import { createSchema } from 'graphql-yoga';
import { GraphQLError } from 'graphql';
import { serveBehindSandbox } from './json-graphql';

/**
 * A tenant that speaks every "changed since" and "newest first" dialect of docs/sync.md's table at once, each collection
 * as its framework answers (Graphene-Django with django-filter, Hot Chocolate, Strawberry-Django, Prisma, AppSync,
 * GitHub, Shopify) over one set of records, plus the traps a proof must catch: a filter argument the server takes
 * and ignores, an ordering it accepts and does not keep, and numbered pages from 0 whose collection is empty at first
 * contact. Records are held by reference: a test changes the tenant by changing them.
 */
export interface DialectRecord {
  id: number;
  title: string;
  updatedAt: string;
}

const TYPES = {
  graphene: 'GrapheneInspection',
  hc: 'HcInspection',
  strawberry: 'StrawberryInspection',
  prisma: 'PrismaInspection',
  appsync: 'AppsyncInspection',
  github: 'GithubIssue',
  shopify: 'ShopifyOrder',
  lyingSince: 'LyingSinceRecord',
  lyingOrder: 'LyingOrderRecord',
} as const;

const relay = (t: string) => `
  type ${t} { id: ID! title: String! updatedAt: DateTime! }
  type ${t}Edge { node: ${t} cursor: String! }
  type ${t}Connection { pageInfo: PageInfo! edges: [${t}Edge]! }`;

const typeDefs = /* GraphQL */ `
  scalar DateTime
  type PageInfo { hasNextPage: Boolean! endCursor: String }
  ${[TYPES.graphene, TYPES.hc, TYPES.strawberry, TYPES.github, TYPES.shopify, TYPES.lyingSince, TYPES.lyingOrder].map(relay).join('\n')}
  type ${TYPES.prisma} { id: ID! title: String! updatedAt: DateTime! }
  type ${TYPES.appsync} { id: ID! title: String! updatedAt: DateTime! }
  type ModelAppsyncInspectionConnection { items: [${TYPES.appsync}]! nextToken: String }
  type ZeroItem { id: ID! title: String! }
  type ZeroPage { items: [ZeroItem!]! }

  input DateTimeOperationFilterInput { eq: DateTime gt: DateTime gte: DateTime lt: DateTime }
  input HcFilterInput { and: [HcFilterInput!] updatedAt: DateTimeOperationFilterInput }
  enum SortEnumType { ASC DESC }
  input HcSortInput { id: SortEnumType updatedAt: SortEnumType }
  input DatetimeFilterLookup { exact: DateTime gt: DateTime gte: DateTime lt: DateTime }
  input StrawberryFilter { updatedAt: DatetimeFilterLookup }
  enum Ordering { ASC DESC DESC_NULLS_LAST }
  input StrawberryOrder { id: Ordering updatedAt: Ordering }
  input DateTimeFilter { equals: DateTime gt: DateTime gte: DateTime lt: DateTime }
  input PrismaWhereInput { updatedAt: DateTimeFilter }
  enum SortOrder { asc desc }
  input PrismaOrderByInput { id: SortOrder updatedAt: SortOrder }
  input ModelStringInput { eq: String ge: String gt: String le: String lt: String }
  input ModelAppsyncInspectionFilterInput { updatedAt: ModelStringInput }
  input IssueFilters { since: DateTime }
  enum IssueOrderField { CREATED_AT UPDATED_AT }
  enum OrderDirection { ASC DESC }
  input IssueOrder { field: IssueOrderField! direction: OrderDirection! }
  enum OrderSortKeys { ID UPDATED_AT }
  enum LyingOrderBy { ID_ASC UPDATED_AT_DESC }

  type Query {
    allInspections(offset: Int, before: String, after: String, first: Int, last: Int, updatedAt: DateTime,
      updatedAt_Gt: DateTime, updatedAt_Gte: DateTime, updatedAt_Lt: DateTime, orderBy: String): ${TYPES.graphene}Connection
    inspections(first: Int, after: String, where: HcFilterInput, order: [HcSortInput!]): ${TYPES.hc}Connection
    strawberryInspections(filters: StrawberryFilter, order: StrawberryOrder, first: Int, after: String): ${TYPES.strawberry}Connection!
    prismaInspections(where: PrismaWhereInput, orderBy: [PrismaOrderByInput!], take: Int, skip: Int): [${TYPES.prisma}!]!
    listAppsyncInspections(filter: ModelAppsyncInspectionFilterInput, limit: Int, nextToken: String): ModelAppsyncInspectionConnection
    issues(first: Int, after: String, filterBy: IssueFilters, orderBy: IssueOrder): ${TYPES.github}Connection!
    orders(first: Int, after: String, query: String, sortKey: OrderSortKeys = ID, reverse: Boolean = false): ${TYPES.shopify}Connection!
    "Takes updatedSince and ignores it."
    lyingSince(first: Int, after: String, updatedSince: DateTime): ${TYPES.lyingSince}Connection!
    "Takes an ordering and does not keep it."
    lyingOrder(first: Int, after: String, orderBy: [LyingOrderBy!]): ${TYPES.lyingOrder}Connection!
    "Numbered pages from 0, no default."
    zeroPages(page: Int, perPage: Int): ZeroPage!
  }
`;

type Rec = DialectRecord;
const ms = (r: Rec) => Date.parse(r.updatedAt);
const at = (v: unknown) => Date.parse(String(v));
const byId = (a: Rec, b: Rec) => a.id - b.id;
const newestFirst = (a: Rec, b: Rec) => ms(b) - ms(a) || a.id - b.id;

/** A comparison object's conditions on the change time: gt, gte, lt, ge… in any of the dialects' names. */
function compare(records: Rec[], ops: Record<string, unknown> | undefined | null): Rec[] {
  if (!ops) return records;
  return records.filter((r) =>
    Object.entries(ops).every(([op, v]) => {
      if (v === null || v === undefined) return true;
      const t = at(v);
      if (Number.isNaN(t)) throw new GraphQLError(`${op}: not a date-time`);
      const x = ms(r);
      return ['gt'].includes(op)
        ? x > t
        : ['gte', 'ge'].includes(op)
          ? x >= t
          : ['lt'].includes(op)
            ? x < t
            : ['eq', 'equals', 'exact'].includes(op)
              ? x === t
              : true;
    }),
  );
}

/** A Relay page over `records` (graphene's `arrayconnection:N` cursors), refusing more than `max` a page. */
function connection(
  records: Rec[],
  args: { first?: number | null; after?: string | null },
  field: string,
  max = 100,
) {
  const first = args.first ?? max;
  if (first > max)
    throw new GraphQLError(
      `Requesting ${first} records on the \`${field}\` connection exceeds the \`first\` limit of ${max} records.`,
    );
  const start = args.after ? Number(Buffer.from(args.after, 'base64').toString().split(':')[1]) + 1 : 0;
  const page = records.slice(start, start + first);
  const cursor = (i: number) => Buffer.from(`arrayconnection:${start + i}`).toString('base64');
  return {
    edges: page.map((node, i) => ({ node, cursor: cursor(i) })),
    pageInfo: {
      hasNextPage: start + first < records.length,
      endCursor: page.length ? cursor(page.length - 1) : null,
    },
  };
}

export function dialectsTenantData(count = 300) {
  const base = Date.now() - 2 * 86_400_000;
  const records: Rec[] = Array.from({ length: count }, (_, i) => ({
    id: i + 1,
    title: `Inspection ${i + 1}`,
    updatedAt: new Date(base + i * 60_000).toISOString(),
  }));
  return { records, zero: [] as Array<{ id: number; title: string }> };
}

export async function startDialectsTenant(data = dialectsTenantData()) {
  const all = () => [...data.records].sort(byId);
  const schema = createSchema({
    typeDefs,
    resolvers: {
      Query: {
        allInspections: (_: unknown, a: Record<string, any>) => {
          let r = compare(all(), {
            gt: a.updatedAt_Gt,
            gte: a.updatedAt_Gte,
            lt: a.updatedAt_Lt,
            eq: a.updatedAt,
          });
          if (a.orderBy) {
            // django-filter's OrderingFilter: the model's field names, nothing else.
            const known = { updated_at: (x: Rec, y: Rec) => ms(x) - ms(y), id: byId } as Record<
              string,
              (x: Rec, y: Rec) => number
            >;
            const name = String(a.orderBy).replace(/^-/, '');
            if (!known[name])
              throw new GraphQLError(
                `['Select a valid choice. ${a.orderBy} is not one of the available choices.']`,
              );
            const sign = String(a.orderBy).startsWith('-') ? -1 : 1;
            r = r.sort((x, y) => sign * known[name](x, y) || x.id - y.id);
          }
          return connection(a.offset ? r.slice(a.offset) : r, a, 'allInspections');
        },
        inspections: (_: unknown, a: Record<string, any>) => {
          let r = compare(all(), a.where?.updatedAt);
          if (a.order?.some((o: Record<string, string>) => o.updatedAt === 'DESC')) r = r.sort(newestFirst);
          return connection(r, a, 'inspections', 50);
        },
        strawberryInspections: (_: unknown, a: Record<string, any>) => {
          let r = compare(all(), a.filters?.updatedAt);
          if (a.order?.updatedAt?.startsWith('DESC')) r = r.sort(newestFirst);
          return connection(r, a, 'strawberryInspections');
        },
        prismaInspections: (_: unknown, a: Record<string, any>) => {
          let r = compare(all(), a.where?.updatedAt);
          if (a.orderBy?.some((o: Record<string, string>) => o.updatedAt === 'desc')) r = r.sort(newestFirst);
          const skip = a.skip ?? 0;
          return r.slice(skip, skip + (a.take ?? 100));
        },
        listAppsyncInspections: (_: unknown, a: Record<string, any>) => {
          // DynamoDB's scan: `limit` records are read, then filtered — pages come short or empty before the end.
          const start = a.nextToken ? Number(Buffer.from(a.nextToken, 'base64').toString()) : 0;
          const limit = a.limit ?? 100;
          const scanned = all().slice(start, start + limit);
          const items = compare(scanned, a.filter?.updatedAt);
          const next =
            start + limit < data.records.length
              ? Buffer.from(String(start + limit)).toString('base64')
              : null;
          return { items, nextToken: next };
        },
        issues: (_: unknown, a: Record<string, any>) => {
          let r = compare(all(), { gte: a.filterBy?.since });
          if (a.orderBy?.field === 'UPDATED_AT')
            r = r.sort(a.orderBy.direction === 'DESC' ? newestFirst : (x, y) => -newestFirst(x, y));
          return connection(r, a, 'issues');
        },
        orders: (_: unknown, a: Record<string, any>) => {
          let r = all();
          if (a.query) {
            const m = /^updated_at:(>=?)'([^']+)'$/.exec(String(a.query));
            if (!m) throw new GraphQLError(`query: cannot parse ${JSON.stringify(a.query)}`);
            r = compare(r, { [m[1] === '>=' ? 'gte' : 'gt']: m[2] });
          }
          if (a.sortKey === 'UPDATED_AT') r = r.sort((x, y) => ms(x) - ms(y) || x.id - y.id);
          if (a.reverse) r = r.reverse();
          return connection(r, a, 'orders');
        },
        lyingSince: (_: unknown, a: Record<string, any>) => connection(all(), a, 'lyingSince'),
        lyingOrder: (_: unknown, a: Record<string, any>) => connection(all(), a, 'lyingOrder'),
        zeroPages: (_: unknown, a: Record<string, any>) => {
          const perPage = a.perPage ?? 10;
          const page = a.page ?? 0;
          return {
            items: [...data.zero].sort((x, y) => x.id - y.id).slice(page * perPage, (page + 1) * perPage),
          };
        },
      },
    },
  });
  return { ...(await serveBehindSandbox(schema)), data };
}

export type DialectsTenant = Awaited<ReturnType<typeof startDialectsTenant>>;
