import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { createSchema, createYoga } from 'graphql-yoga';

/**
 * A small GraphQL API that trusts Keycloak's JWKS, as the tenant's API trusts its IdP: signature, issuer and
 * expiry are checked on every request; mutations need a person (M2M service accounts are read-only).
 */
export async function startKeycloakGraphql(issuer: string, records = 25) {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/protocol/openid-connect/certs`));
  const controls = Array.from({ length: records }, (_, i) => ({
    id: `ctl-${String(i + 1).padStart(4, '0')}`,
    status: 'draft',
  }));
  const stats = { queries: 0, mutations: 0, refused: 0 };
  const yoga = createYoga<{ claims: JWTPayload }>({
    logging: false,
    maskedErrors: false,
    schema: createSchema({
      typeDefs: /* GraphQL */ `
        type Control {
          id: ID!
          status: String!
        }
        type ControlEdge {
          node: Control!
          cursor: String!
        }
        type PageInfo {
          hasNextPage: Boolean!
          endCursor: String
        }
        type ControlConnection {
          edges: [ControlEdge!]!
          pageInfo: PageInfo!
        }
        type Tenant {
          name: String!
        }
        type Query {
          currentTenant: Tenant!
          whoami: String!
          controls(first: Int, after: String): ControlConnection!
        }
        input ControlInput {
          status: String
        }
        type Mutation {
          updateControl(id: ID!, input: ControlInput!): Control!
        }
      `,
      resolvers: {
        Query: {
          currentTenant: () => ({ name: issuer.split('/').pop() }),
          whoami: (_: unknown, __: unknown, ctx: { claims: JWTPayload }) =>
            String(ctx.claims.preferred_username),
          controls: (_: unknown, args: { first?: number; after?: string }) => {
            stats.queries++;
            const start = args.after ? Number(Buffer.from(args.after, 'base64url').toString()) : 0;
            const slice = controls.slice(start, start + (args.first ?? 10));
            const end = start + slice.length;
            return {
              edges: slice.map((node, i) => ({
                node,
                cursor: Buffer.from(String(start + i + 1)).toString('base64url'),
              })),
              pageInfo: {
                hasNextPage: end < controls.length,
                endCursor: slice.length ? Buffer.from(String(end)).toString('base64url') : null,
              },
            };
          },
        },
        Mutation: {
          updateControl: (
            _: unknown,
            args: { id: string; input: { status?: string } },
            ctx: { claims: JWTPayload },
          ) => {
            if (String(ctx.claims.preferred_username).startsWith('service-account-')) {
              stats.refused++;
              throw new Error('M2M credentials are read-only');
            }
            stats.mutations++;
            const c = controls.find((x) => x.id === args.id);
            if (!c) throw new Error(`no control ${args.id}`);
            c.status = args.input.status ?? c.status;
            return c;
          },
        },
      },
    }),
    context: async ({ request }) => {
      const token = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
      if (!token) throw unauthorized();
      try {
        const { payload } = await jwtVerify(token, jwks, { issuer });
        return { claims: payload };
      } catch {
        throw unauthorized();
      }
    },
  });
  const server: Server = createServer(yoga);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, stats, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function unauthorized() {
  return new Response(
    JSON.stringify({ errors: [{ message: 'invalid token', extensions: { code: 'UNAUTHENTICATED' } }] }),
    {
      status: 401,
      headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' },
    },
  );
}
