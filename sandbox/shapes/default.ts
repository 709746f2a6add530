import { GraphQLError } from 'graphql';
import type { Kind } from '../data/generate';
import type { Collection } from '../data/store';
import type { Sandbox } from '../state';
import { notFound, pageSizeOf, sinceOf, type Shape } from './common';

/**
 * The sandbox's own schema (docs/sandbox.md): six Relay connections named after the record kinds, with
 * `updatedSince` for incremental reads, and the two mutations an admin may run.
 */
const typeDefs = /* GraphQL */ `
  extend type Query {
    controls(first: Int = 100, after: String, updatedSince: String): ControlConnection
    evidence(first: Int = 100, after: String, updatedSince: String): EvidenceConnection
    personnel(first: Int = 100, after: String, updatedSince: String): PersonnelConnection
    kpis(first: Int = 100, after: String, updatedSince: String): KpiConnection
    reports(first: Int = 100, after: String, updatedSince: String): ReportConnection
    users(first: Int = 100, after: String, updatedSince: String): UserConnection
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
    updatedAt: String!
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
    updatedAt: String!
  }
  type Kpi {
    id: ID!
    name: String!
    unit: String!
    target: Float!
    value: Float!
    period: String!
    trend: String!
    updatedAt: String!
  }
  type Report {
    id: ID!
    title: String!
    type: String!
    status: String!
    period: String!
    createdAt: String!
    author: PersonRef!
    updatedAt: String!
  }
  type User {
    id: ID!
    name: String!
    email: String!
    role: String!
    active: Boolean!
    lastLoginAt: String!
    updatedAt: String!
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

const CONTROL_STATUSES = ['implemented', 'partially_implemented', 'not_implemented', 'not_applicable'];

const cursorOf = (kind: Kind, index: number) => Buffer.from(`${kind}:${index}`).toString('base64url');

function indexOfCursor(kind: Kind, cursor: string): number {
  const m = /^(\w+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || m[1] !== kind)
    throw new GraphQLError(`after: not a cursor of ${kind}`, { extensions: { code: 'BAD_USER_INPUT' } });
  return Number(m[2]);
}

type ConnArgs = { first?: number | null; after?: string | null; updatedSince?: string | null };

function connection(c: Collection, args: ConnArgs) {
  const first = pageSizeOf('first', args.first ?? 100);
  const after = args.after ? indexOfCursor(c.kind, args.after) : -1;
  const { items, hasNextPage, total } = c.page(first, after, sinceOf(args.updatedSince));
  const edges = items.map(({ index, node }) => ({ cursor: cursorOf(c.kind, index), node }));
  return { edges, pageInfo: { hasNextPage, endCursor: edges.at(-1)?.cursor ?? null }, totalCount: total };
}

export const defaultShape: Shape = {
  name: 'default',
  typeDefs,
  connections: ['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users'],
  resolvers: (sb: Sandbox) => {
    const cols = () => sb.data.collections;
    return {
      Query: {
        controls: (_: unknown, a: ConnArgs) => connection(cols().controls, a),
        evidence: (_: unknown, a: ConnArgs) => connection(cols().evidence, a),
        personnel: (_: unknown, a: ConnArgs) => connection(cols().personnel, a),
        kpis: (_: unknown, a: ConnArgs) => connection(cols().kpis, a),
        reports: (_: unknown, a: ConnArgs) => connection(cols().reports, a),
        users: (_: unknown, a: ConnArgs) => connection(cols().users, a),
      },
      Mutation: {
        updateControl: (_: unknown, { id, input }: { id: string; input: { status?: string | null } }) => {
          sb.refuseIfAsked(id);
          if (input.status != null && !CONTROL_STATUSES.includes(input.status)) {
            throw new GraphQLError(`status must be one of ${CONTROL_STATUSES.join(', ')}`, {
              extensions: { code: 'BAD_USER_INPUT' },
            });
          }
          const fields = input.status == null ? {} : { status: input.status };
          return cols().controls.update(id, fields) ?? notFound('controls', id);
        },
        updateKpi: (_: unknown, { id, input }: { id: string; input: { value?: number | null } }) => {
          sb.refuseIfAsked(id);
          return (
            cols().kpis.update(id, input.value == null ? {} : { value: input.value }) ?? notFound('kpis', id)
          );
        },
      },
    };
  },
};
