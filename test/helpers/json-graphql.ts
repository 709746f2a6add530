import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GraphQLSchema } from 'graphql';
import { createYoga } from 'graphql-yoga';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { sandboxFixture } from './sandbox';

/**
 * A second server nobody here wrote, of another convention: json-graphql-server (the schema it generates from JSON
 * data: `allPosts(page, perPage, sortField, sortOrder, filter)` with pages counted from 0 and no default,
 * `_allPostsMeta { count }` beside each list, snake_case timestamps filtered as `updated_at_gte`, relations embedded
 * both ways), served by graphql-yoga behind the sandbox's identity provider. The data is held by reference: a test
 * changes the tenant by changing it.
 */
export type JsonData = Record<string, Array<Record<string, unknown>>>;

const iso = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();

/** 57 users, 1 234 posts (never a multiple of a page), 3 tags (fewer than a page). */
export function jsonTenantData(): JsonData {
  const users = Array.from({ length: 57 }, (_, i) => ({
    id: i + 1,
    name: `User ${i + 1}`,
    updated_at: iso(i),
  }));
  const posts = Array.from({ length: 1234 }, (_, i) => ({
    id: i + 1,
    title: `Post ${i + 1}`,
    user_id: 1 + (i % 57),
    updated_at: iso(100 + i),
  }));
  const tags = ['alpha', 'beta', 'gamma'].map((name, i) => ({ id: i + 1, name }));
  return { users, posts, tags };
}

export async function startJsonGraphqlTenant(data: JsonData = jsonTenantData()) {
  // CommonJS entry of a package whose main is ESM; typed here by what the test uses.
  const { jsonSchemaBuilder } = require('json-graphql-server/node') as {
    jsonSchemaBuilder: (d: JsonData) => GraphQLSchema;
  };
  return { ...(await serveBehindSandbox(jsonSchemaBuilder(data))), data };
}

/**
 * A GraphQL schema served by graphql-yoga — or any handler, a proxy to another server — on loopback behind the
 * sandbox's identity provider (a bearer token the sandbox issued, checked against its keys): a server of another
 * shape that the app signs in to as to any tenant.
 */
export async function serveBehindSandbox(
  target: GraphQLSchema | ((req: IncomingMessage, res: ServerResponse) => unknown),
) {
  const sb = await sandboxFixture({ records: 0 });
  const issuer = `${sb.authUrl}/realms/${sb.tenant}`;
  const jwks = createRemoteJWKSet(new URL(`${issuer}/protocol/openid-connect/certs`));
  const stats = { requests: 0, refused: 0 };
  const handle =
    typeof target === 'function'
      ? target
      : createYoga({ schema: target, logging: false, graphqlEndpoint: '/graphql' });
  const server: Server = createServer(async (req, res) => {
    const auth = req.headers.authorization ?? '';
    try {
      if (!auth.startsWith('Bearer ')) throw new Error('no token');
      await jwtVerify(auth.slice(7), jwks, { issuer });
    } catch {
      stats.refused++;
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': 'Bearer error="invalid_token"',
      });
      return res.end(JSON.stringify({ errors: [{ message: 'a valid bearer token is required' }] }));
    }
    stats.requests++;
    return handle(req, res);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    sb,
    baseUrl,
    stats,
    settings: { ...sb.settings, TENANT_BASE_URL: baseUrl },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
      await sb.close();
    },
  };
}

export type JsonGraphqlTenant = Awaited<ReturnType<typeof startJsonGraphqlTenant>>;
