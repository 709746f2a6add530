import { GraphQLError } from 'graphql';
import type { RecordData } from '../data/generate';
import type { Collection } from '../data/store';
import type { Sandbox } from '../state';
import type { Viewer } from '../types';
import { cursorOf, indexOfCursor, notFound, pageSizeOf, sinceOf, uuidOf, type Shape } from './common';

/**
 * A schema we did not design our streams for (`sandbox --schema varied`), over the same records: every way a
 * GraphQL API pages a collection, keys that are not `id`, a field the M2M credential may not read, nested lists of
 * objects, a cycle, and root fields that are not collections at all. docs/sandbox.md lists what is where.
 */
const typeDefs = /* GraphQL */ `
  extend type Query {
    "Relay-style with nodes (no edges); changedSince reads incrementally."
    controlList(first: Int = 50, after: String, changedSince: String): ControlPage!
    "Offset and limit, a plain list, no total. The server answers at most 40 a page, whatever is asked."
    evidenceItems(limit: Int = 50, offset: Int = 0): [EvidenceItem!]!
    "Numbered pages with a total; at most 50 a page."
    staff(page: Int = 1, perPage: Int = 25): StaffPage!
    "Every metric in one answer, keyed by key."
    metrics: [Metric!]!
    "first and skip, with a total."
    reportFeed(first: Int = 20, skip: Int = 0): ReportFeed!
    "Relay-style with edges."
    accounts(first: Int = 50, after: String): AccountConnection!
    account(id: ID!): Account
    settings: Settings!
    tags: [String!]!
  }
  type Mutation {
    setMetric(key: String!, value: Float!): Metric!
  }
  type PageInfo {
    hasNextPage: Boolean!
    endCursor: String
  }
  type Person {
    id: ID!
    name: String!
  }
  enum ControlState {
    IMPLEMENTED
    PARTIALLY_IMPLEMENTED
    NOT_IMPLEMENTED
    NOT_APPLICABLE
  }
  type Control {
    id: ID!
    code: String!
    name: String!
    state: ControlState!
    owner: Person
    labels: [String!]!
    lastChanged: String!
  }
  type ControlPage {
    nodes: [Control!]!
    pageInfo: PageInfo!
  }
  type ControlRef {
    id: ID!
    code: String!
  }
  type EvidenceItem {
    uuid: String!
    title: String!
    control: ControlRef!
    bytes: Int!
    receivedAt: String!
  }
  type Screening {
    status: String!
    checkedOn: String!
  }
  type StaffMember {
    id: ID!
    fullName: String!
    team: String!
    title: String!
    startedOn: String!
    screening: Screening!
  }
  type StaffPage {
    items: [StaffMember!]!
    total: Int!
    page: Int!
    perPage: Int!
  }
  type Metric {
    key: String!
    label: String!
    unit: String!
    value: Float!
    target: Float!
    period: String!
  }
  type Report {
    id: ID!
    heading: String!
    kind: String!
    state: String!
    period: String!
    authoredBy: Person!
  }
  type ReportFeed {
    results: [Report!]!
    totalCount: Int!
  }
  type Role {
    name: String!
    grantedAt: String!
    scopes: [String!]!
  }
  type Account {
    id: ID!
    displayName: String!
    "People only: an M2M credential may not read it."
    email: String
    active: Boolean!
    roles: [Role!]!
    manager: Account
    lastLogin: String!
  }
  type AccountEdge {
    cursor: String!
    node: Account!
  }
  type AccountConnection {
    edges: [AccountEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type Settings {
    timezone: String!
    locale: String!
  }
`;

interface Context {
  viewer: Viewer;
}

const EVIDENCE_PAGE_CAP = 40;
const STAFF_PAGE_MAX = 50;

const metricKey = (id: string) => `m-${id.slice(4)}`;

const control = (r: RecordData) => ({
  id: r.id,
  code: r.reference,
  name: r.title,
  state: String(r.status).toUpperCase(),
  owner: r.owner ? { id: (r.owner as RecordData).id, name: (r.owner as RecordData).name } : null,
  labels: r.tags,
  lastChanged: r.updatedAt,
});
const evidence = (r: RecordData) => ({
  uuid: uuidOf(r.id),
  title: r.title,
  control: { id: r.controlId, code: `A.${Number(String(r.controlId).slice(4)) % 13}` },
  bytes: r.sizeBytes,
  receivedAt: r.uploadedAt,
});
const staffMember = (r: RecordData) => ({
  id: r.id,
  fullName: `${String(r.firstName)} ${String(r.lastName)}`,
  team: r.department,
  title: r.jobTitle,
  startedOn: r.startDate,
  screening: {
    status: (r.screening as RecordData).status,
    checkedOn: (r.screening as RecordData).date,
  },
});
const metric = (r: RecordData) => ({
  key: metricKey(r.id),
  label: r.name,
  unit: r.unit,
  value: r.value,
  target: r.target,
  period: r.period,
});
const report = (r: RecordData) => ({
  id: r.id,
  heading: r.title,
  kind: r.type,
  state: r.status,
  period: r.period,
  authoredBy: { id: (r.author as RecordData).id, name: (r.author as RecordData).name },
});

/** Live records from position `offset` (skipping deleted ones), at most `limit`, and how many there are. */
function range(c: Collection, offset: number, limit: number) {
  const items: RecordData[] = [];
  let skipped = 0;
  let after = -1;
  while (items.length < limit) {
    const page = c.page(Math.min(1000, limit + offset - skipped), after);
    for (const { index, node } of page.items) {
      after = index;
      if (skipped < offset) skipped++;
      else if (items.length < limit) items.push(node);
    }
    if (!page.hasNextPage) break;
  }
  return { items, total: c.count };
}

export const variedShape: Shape = {
  name: 'varied',
  typeDefs,
  connections: ['controlList', 'evidenceItems', 'staff', 'metrics', 'reportFeed', 'accounts'],
  resolvers: (sb: Sandbox) => {
    const cols = () => sb.data.collections;
    const account = (r: RecordData, index: number) => ({
      id: r.id,
      displayName: r.name,
      email: r.email,
      active: r.active,
      roles: [
        {
          name: r.role,
          grantedAt: r.lastLoginAt,
          scopes: ['read', ...(r.role === 'Super User' ? ['write'] : [])],
        },
      ],
      managerIndex: (index * 7 + 3) % Math.max(cols().users.count, 1),
      lastLogin: r.lastLoginAt,
    });
    return {
      Query: {
        controlList: (
          _: unknown,
          a: { first?: number | null; after?: string | null; changedSince?: string | null },
        ) => {
          const first = pageSizeOf('first', a.first ?? 50);
          const after = a.after ? indexOfCursor('controls', a.after) : -1;
          const page = cols().controls.page(first, after, sinceOf(a.changedSince, 'changedSince'));
          return {
            nodes: page.items.map(({ node }) => control(node)),
            pageInfo: {
              hasNextPage: page.hasNextPage,
              endCursor: page.items.length ? cursorOf('controls', page.items.at(-1)!.index) : null,
            },
          };
        },
        evidenceItems: (_: unknown, a: { limit?: number | null; offset?: number | null }) => {
          const limit = Math.min(pageSizeOf('limit', a.limit ?? 50), EVIDENCE_PAGE_CAP);
          const offset = a.offset ?? 0;
          if (offset < 0)
            throw new GraphQLError('offset must be 0 or more', { extensions: { code: 'BAD_USER_INPUT' } });
          return range(cols().evidence, offset, limit).items.map(evidence);
        },
        staff: (_: unknown, a: { page?: number | null; perPage?: number | null }) => {
          const perPage = pageSizeOf('perPage', a.perPage ?? 25, STAFF_PAGE_MAX);
          const page = a.page ?? 1;
          if (page < 1)
            throw new GraphQLError('page starts at 1', { extensions: { code: 'BAD_USER_INPUT' } });
          const { items, total } = range(cols().personnel, (page - 1) * perPage, perPage);
          return { items: items.map(staffMember), total, page, perPage };
        },
        metrics: () => range(cols().kpis, 0, cols().kpis.count).items.map(metric),
        reportFeed: (_: unknown, a: { first?: number | null; skip?: number | null }) => {
          const { items, total } = range(cols().reports, a.skip ?? 0, pageSizeOf('first', a.first ?? 20));
          return { results: items.map(report), totalCount: total };
        },
        accounts: (_: unknown, a: { first?: number | null; after?: string | null }) => {
          const first = pageSizeOf('first', a.first ?? 50);
          const after = a.after ? indexOfCursor('users', a.after) : -1;
          const page = cols().users.page(first, after);
          const edges = page.items.map(({ index, node }) => ({
            cursor: cursorOf('users', index),
            node: account(node, index),
          }));
          return {
            edges,
            pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null },
            totalCount: page.total,
          };
        },
        account: (_: unknown, { id }: { id: string }) => {
          const r = cols().users.get(id);
          return r ? account(r, Number(id.slice(4)) - 1) : null;
        },
        settings: () => ({ timezone: 'Europe/Amsterdam', locale: 'nl-NL' }),
        tags: () => ['core', 'annual', 'quarterly'],
      },
      Account: {
        email: (parent: { email: string }, _: unknown, ctx: Context) => {
          if (ctx.viewer.kind === 'm2m')
            throw new GraphQLError('Not authorized to read Account.email with an M2M credential', {
              extensions: { code: 'FORBIDDEN' },
            });
          return parent.email;
        },
        manager: (parent: { managerIndex: number }) => {
          const page = cols().users.page(1, parent.managerIndex - 1);
          const hit = page.items[0];
          return hit ? account(hit.node, hit.index) : null;
        },
      },
      Mutation: {
        setMetric: (_: unknown, { key, value }: { key: string; value: number }) => {
          const id = `kpi-${key.slice(2)}`;
          sb.refuseIfAsked(id);
          if (!/^m-\d{7,}$/.test(key)) notFound('metrics', key);
          const r = cols().kpis.update(id, { value });
          return r ? metric(r) : notFound('metrics', key);
        },
      },
    };
  },
};
