import { createHash } from 'node:crypto';
import { GraphQLError } from 'graphql';
import type { Kind } from '../data/generate';
import type { Sandbox } from '../state';

/**
 * A schema the sandbox can serve (`sandbox --schema NAME`): its type definitions over the same generated records,
 * and their resolvers. Every shape has the seed's `tenant` / `currentTenant` and the `viewer`; the rest is the
 * shape's own, so tests meet collections named, paged and keyed in ways the default shape never is.
 */
export interface Shape {
  name: string;
  /** SDL; the shape's root fields go in `extend type Query`. */
  typeDefs: string;
  /** Root fields that list a collection (the complexity limit counts them). */
  connections: string[];
  /** Fields served but never shown by introspection: how a type without fields is served (sandbox/shapes/odd.ts). */
  hiddenFields?: ReadonlyArray<{ type: string; field: string }>;
  resolvers: (sb: Sandbox) => Resolvers;
}

/** Field resolvers by type, as graphql-yoga's createSchema takes them. */
export type Resolvers = Record<string, Record<string, unknown>>;

export const COMMON_TYPEDEFS = /* GraphQL */ `
  type Query {
    tenant(name: String!): Tenant
    currentTenant: Tenant!
    viewer: Viewer!
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
`;

export const MAX_PAGE_SIZE = 1000;

export function pageSizeOf(argument: string, n: number, max = MAX_PAGE_SIZE): number {
  if (n < 1 || n > max)
    throw new GraphQLError(`${argument} must be between 1 and ${max}`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  return n;
}

/** A "changed since" argument: an ISO date-time; records changed at or after it (by their `updatedAt`). */
export function sinceOf(text: string | null | undefined, argument = 'updatedSince'): number | undefined {
  if (text === null || text === undefined) return undefined;
  const ms = Date.parse(text);
  if (Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}T/.test(text))
    throw new GraphQLError(`${argument} must be an ISO 8601 date-time`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  return ms;
}

export function notFound(kind: Kind | string, id: string): never {
  throw new GraphQLError(`no ${kind} record with id ${id}`, { extensions: { code: 'NOT_FOUND' } });
}

/** An opaque cursor for the record at `index` of a collection, and back (a shape's Relay-style paging). */
export const cursorOf = (kind: string, index: number) =>
  Buffer.from(`v:${kind}:${index}`).toString('base64url');
export function indexOfCursor(kind: string, cursor: string): number {
  const m = /^v:(\w+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || m[1] !== kind)
    throw new GraphQLError(`after: not a cursor of ${kind}`, { extensions: { code: 'BAD_USER_INPUT' } });
  return Number(m[2]);
}

/** A stable UUID-shaped key from a record id. */
export const uuidOf = (id: string) => {
  const h = createHash('sha256').update(id).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
};
