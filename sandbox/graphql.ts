import { getOperationAST, GraphQLError, Kind as AstKind, visit, type DocumentNode } from 'graphql';
import { createSchema, createYoga, type Plugin } from 'graphql-yoga';
import type { Kind } from './data/generate';
import type { Collection } from './data/store';
import type { Sandbox } from './state';

export interface Viewer {
  kind: 'person' | 'm2m';
  /** Username for a person; client id for an M2M credential. */
  name: string;
  subject: string;
}

interface Context {
  viewer: Viewer;
}

const typeDefs = /* GraphQL */ `
  type Query {
    tenant(name: String!): Tenant
    currentTenant: Tenant!
    viewer: Viewer!
    controls(first: Int = 100, after: String): ControlConnection
    evidence(first: Int = 100, after: String): EvidenceConnection
    personnel(first: Int = 100, after: String): PersonnelConnection
    kpis(first: Int = 100, after: String): KpiConnection
    reports(first: Int = 100, after: String): ReportConnection
    users(first: Int = 100, after: String): UserConnection
  }
  type Mutation {
    updateControl(id: ID!, input: UpdateControlInput!): Control!
    updateKpi(id: ID!, input: UpdateKpiInput!): Kpi!
  }
  input UpdateControlInput {
    status: String
  }
  input UpdateKpiInput {
    value: Float
  }
  type Tenant {
    name: String!
    displayName: String!
  }
  type Viewer {
    kind: String!
    name: String!
    readOnly: Boolean!
  }
  type PageInfo {
    hasNextPage: Boolean!
    endCursor: String
  }
  type PersonRef {
    id: ID!
    name: String!
    email: String
  }
  type Screening {
    status: String!
    date: String!
  }
  type Control {
    id: ID!
    reference: String!
    title: String!
    description: String!
    framework: String!
    status: String!
    owner: PersonRef!
    tags: [String!]!
    updatedAt: String!
  }
  type Evidence {
    id: ID!
    title: String!
    controlId: ID!
    fileName: String!
    mimeType: String!
    sizeBytes: Int!
    uploadedAt: String!
    uploadedBy: PersonRef!
  }
  type Personnel {
    id: ID!
    employeeNumber: String!
    firstName: String!
    lastName: String!
    email: String!
    department: String!
    jobTitle: String!
    startDate: String!
    screening: Screening!
  }
  type Kpi {
    id: ID!
    name: String!
    unit: String!
    target: Float!
    value: Float!
    period: String!
    trend: String!
  }
  type Report {
    id: ID!
    title: String!
    type: String!
    status: String!
    period: String!
    createdAt: String!
    author: PersonRef!
  }
  type User {
    id: ID!
    name: String!
    email: String!
    role: String!
    active: Boolean!
    lastLoginAt: String!
  }
  type ControlEdge {
    cursor: String!
    node: Control!
  }
  type EvidenceEdge {
    cursor: String!
    node: Evidence!
  }
  type PersonnelEdge {
    cursor: String!
    node: Personnel!
  }
  type KpiEdge {
    cursor: String!
    node: Kpi!
  }
  type ReportEdge {
    cursor: String!
    node: Report!
  }
  type UserEdge {
    cursor: String!
    node: User!
  }
  type ControlConnection {
    edges: [ControlEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type EvidenceConnection {
    edges: [EvidenceEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type PersonnelConnection {
    edges: [PersonnelEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type KpiConnection {
    edges: [KpiEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type ReportConnection {
    edges: [ReportEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
  type UserConnection {
    edges: [UserEdge!]!
    pageInfo: PageInfo!
    totalCount: Int!
  }
`;

export const MAX_PAGE_SIZE = 1000;
const CONTROL_STATUSES = ['implemented', 'partially_implemented', 'not_implemented', 'not_applicable'];

const cursorOf = (kind: Kind, index: number) => Buffer.from(`${kind}:${index}`).toString('base64url');

function indexOfCursor(kind: Kind, cursor: string): number {
  const m = /^(\w+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || m[1] !== kind)
    throw new GraphQLError(`after: not a cursor of ${kind}`, { extensions: { code: 'BAD_USER_INPUT' } });
  return Number(m[2]);
}

function connection(c: Collection, args: { first?: number | null; after?: string | null }) {
  const first = args.first ?? 100;
  if (first < 1 || first > MAX_PAGE_SIZE) {
    throw new GraphQLError(`first must be between 1 and ${MAX_PAGE_SIZE}`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  const after = args.after ? indexOfCursor(c.kind, args.after) : -1;
  const { items, hasNextPage } = c.page(first, after);
  const edges = items.map(({ index, node }) => ({ cursor: cursorOf(c.kind, index), node }));
  return { edges, pageInfo: { hasNextPage, endCursor: edges.at(-1)?.cursor ?? null }, totalCount: c.count };
}

function notFound(kind: Kind, id: string): never {
  throw new GraphQLError(`no ${kind} record with id ${id}`, { extensions: { code: 'NOT_FOUND' } });
}

/**
 * Counts operations and refuses mutations for M2M credentials before any resolver runs, so refused
 * mutations never change data.
 */
/**
 * The seed names no complexity limit, but a real service has one: without it one request of thousands of
 * aliased `controls(first: 1000)` took gigabytes and most of a minute. Counted on the document, before it is
 * validated or run: selections (fields and fragment spreads) and connection fields, aliases included.
 */
export const QUERY_LIMITS = { selections: 1_000, connections: 12 } as const;
const CONNECTIONS = new Set(['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users']);

function tooComplex(document: DocumentNode): string | undefined {
  let selections = 0;
  let connections = 0;
  visit(document, {
    [AstKind.FIELD]: (node) => {
      selections++;
      if (CONNECTIONS.has(node.name.value)) connections++;
    },
    [AstKind.FRAGMENT_SPREAD]: () => {
      selections++;
    },
  });
  if (connections > QUERY_LIMITS.connections)
    return `the request selects ${connections} connections; at most ${QUERY_LIMITS.connections} per request`;
  if (selections > QUERY_LIMITS.selections)
    return `the request has ${selections} selections; at most ${QUERY_LIMITS.selections} per request`;
  return undefined;
}

function accessPlugin(sb: Sandbox): Plugin<Context> {
  return {
    // Before validation, whose overlapping-fields rule is itself quadratic in the number of aliases.
    onValidate({ params, setResult }) {
      const problem = tooComplex(params.documentAST);
      if (problem) setResult([new GraphQLError(problem, { extensions: { code: 'QUERY_TOO_COMPLEX' } })]);
    },
    onExecute({ args, setResultAndStopExecution }) {
      const op = getOperationAST(args.document, args.operationName ?? undefined);
      const ctx = args.contextValue as Context;
      if (op?.operation === 'mutation' && ctx.viewer.kind === 'm2m') {
        sb.stats.graphql.refused++;
        setResultAndStopExecution({
          data: null,
          errors: [
            new GraphQLError('Mutations are not allowed for M2M credentials: they are read-only', {
              extensions: { code: 'FORBIDDEN' },
            }),
          ],
        });
        return;
      }
      if (op?.operation === 'mutation') sb.stats.graphql.mutations++;
      else sb.stats.graphql.queries++;
    },
  };
}

export function createGraphql(sb: Sandbox) {
  const cols = () => sb.data.collections;
  const schema = createSchema<Context>({
    typeDefs,
    resolvers: {
      Query: {
        tenant: (_: unknown, { name }: { name: string }) =>
          name === sb.options.tenant ? { name, displayName: sb.displayName() } : null,
        currentTenant: () => ({ name: sb.options.tenant, displayName: sb.displayName() }),
        viewer: (_: unknown, __: unknown, ctx: Context) => ({
          ...ctx.viewer,
          readOnly: ctx.viewer.kind === 'm2m',
        }),
        controls: (_: unknown, a: ConnArgs) => connection(cols().controls, a),
        evidence: (_: unknown, a: ConnArgs) => connection(cols().evidence, a),
        personnel: (_: unknown, a: ConnArgs) => connection(cols().personnel, a),
        kpis: (_: unknown, a: ConnArgs) => connection(cols().kpis, a),
        reports: (_: unknown, a: ConnArgs) => connection(cols().reports, a),
        users: (_: unknown, a: ConnArgs) => connection(cols().users, a),
      },
      Mutation: {
        updateControl: (_: unknown, { id, input }: { id: string; input: { status?: string | null } }) => {
          if (input.status != null && !CONTROL_STATUSES.includes(input.status)) {
            throw new GraphQLError(`status must be one of ${CONTROL_STATUSES.join(', ')}`, {
              extensions: { code: 'BAD_USER_INPUT' },
            });
          }
          const fields =
            input.status == null
              ? {}
              : { status: input.status, updatedAt: new Date(sb.clock.now()).toISOString() };
          return cols().controls.update(id, fields) ?? notFound('controls', id);
        },
        updateKpi: (_: unknown, { id, input }: { id: string; input: { value?: number | null } }) =>
          cols().kpis.update(id, input.value == null ? {} : { value: input.value }) ?? notFound('kpis', id),
      },
    },
  });
  return createYoga<Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: false,
    landingPage: false,
    maskedErrors: true,
    logging: false,
    plugins: [accessPlugin(sb)],
  });
}

type ConnArgs = { first?: number | null; after?: string | null };
