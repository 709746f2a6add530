import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { FAULT_ROUTES, type FaultSpec } from './faults';
import { createGraphql, type Viewer } from './graphql';
import { limitsSchema } from './limits';
import { registerHooks } from './hooks';
import { HttpError, json, readBody, Router, send, type Reply, type Request } from './http';
import { registerDevicePage } from './idp/device-page';
import { registerIdpEndpoints } from './idp/endpoints';
import { registerPortal } from './portal';
import { Sandbox, type SandboxOptions } from './state';

export const DEFAULT_TENANT = 'acme';
export const DEMO_CLIENT_ID = 'demo-sync';
const GRAPHQL_BODY_LIMIT = 1024 * 1024;

export const sandboxOptionsSchema = z.object({
  port: z.number().int().min(0).max(65_535).default(0),
  host: z.string().default('127.0.0.1'),
  // A realm name that cannot collide with the sandbox's own top-level paths.
  tenant: z
    .string()
    .regex(/^[a-z][a-z0-9-]{1,62}$/, 'lowercase letters, digits and dashes, starting with a letter')
    .refine((t) => !['auth', 'graphql', 'realms'].includes(t), 'reserved name')
    .default(DEFAULT_TENANT),
  records: z.number().int().min(0).max(10_000_000).default(250),
  seed: z.string().min(1).max(100).default('sandbox'),
  m2mEnabled: z.boolean().default(true),
  /** Keycloak accepts (and ignores) `scope` on client credentials; the seed's call has none. Off: refuse it. */
  acceptClientCredentialsScope: z.boolean().default(false),
  demoClientSecret: z.string().min(16).optional(),
  /** The GraphQL schema served (sandbox/shapes/): `default`; `varied` — other paging, keys and shapes; `odd` — a
   * reference ID beside the key, a fan-out, a type without fields. */
  schema: z.enum(['default', 'varied', 'odd']).default('default'),
  /** False: introspection is refused. */
  introspection: z.boolean().default(true),
  /** Limits the tenant enforces without announcing them (sandbox/limits.ts): none by default. */
  limits: limitsSchema.default({}),
});
export type StartOptions = z.input<typeof sandboxOptionsSchema>;

export interface RunningSandbox {
  sandbox: Sandbox;
  baseUrl: string;
  authUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
  adminUsername: string;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GraphQL's partial success: the data as it was, and an error for one part of it. */
function withPartialError(reply: Reply, message?: string): Reply {
  const body = JSON.parse(String(reply.body ?? '{}')) as { errors?: unknown[] };
  body.errors = [
    ...(body.errors ?? []),
    {
      message: message ?? 'injected fault: part of the answer failed',
      extensions: { code: 'SANDBOX_FAULT' },
    },
  ];
  return { ...reply, body: JSON.stringify(body) };
}

/** Headers and the first half of the body, then a reset: a connection lost mid-answer. */
function cutMidBody(res: ServerResponse, reply: Reply): void {
  const body = Buffer.from(reply.body ?? '');
  res.writeHead(reply.status, { ...reply.headers, 'content-length': String(body.length) });
  res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
}

function faultReply(route: string, fault: FaultSpec): Reply {
  const status = fault.status as number;
  const retryAfter = fault.retryAfterSeconds ?? (status === 429 || status === 503 ? 1 : undefined);
  const headers: Record<string, string> =
    retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) };
  const body =
    route === 'graphql'
      ? {
          errors: [
            {
              message: fault.message ?? `injected fault: HTTP ${status}`,
              extensions: { code: 'SANDBOX_FAULT' },
            },
          ],
        }
      : {
          error: status >= 500 ? 'temporarily_unavailable' : 'invalid_request',
          error_description: `injected fault: HTTP ${status}`,
        };
  return json(status, body, headers);
}

function unauthorized(sb: Sandbox, message: string): Reply {
  sb.stats.graphql.refused++;
  return json(
    401,
    { errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] },
    {
      'www-authenticate': `Bearer realm="${sb.options.tenant}", error="invalid_token"`,
    },
  );
}

function graphqlHandler(sb: Sandbox) {
  const yoga = createGraphql(sb);
  return async (req: Request): Promise<Reply> => {
    const body = await req.body(GRAPHQL_BODY_LIMIT);
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer '))
      return unauthorized(sb, 'Authorization: Bearer <access token> is required');
    let viewer: Viewer;
    try {
      const claims = await sb.keys.verify(auth.slice(7).trim(), sb.issuer(), sb.clock);
      if (claims.typ !== 'Bearer') return unauthorized(sb, 'not an access token');
      viewer =
        claims.azp === 'portal'
          ? { kind: 'person', name: String(claims.preferred_username), subject: String(claims.sub) }
          : { kind: 'm2m', name: String(claims.azp), subject: String(claims.sub) };
    } catch {
      return unauthorized(sb, 'access token is invalid or expired');
    }
    // A rate per credential, its state on every answer (as the IETF RateLimit fields say), 429 past it.
    let limited: Record<string, string> = {};
    if (sb.limits.rate !== undefined) {
      const rate = sb.rates.admit(`${viewer.kind}:${viewer.name}`, sb.limits.rate);
      limited = rate.headers;
      if (!rate.allowed) {
        sb.stats.graphql.rateLimited++;
        return json(
          429,
          { errors: [{ message: 'Too many requests: slow down', extensions: { code: 'RATE_LIMITED' } }] },
          limited,
        );
      }
    }
    const contentType = String(req.headers['content-type'] ?? '');
    if (!/^application\/json\b/i.test(contentType)) {
      return json(415, { errors: [{ message: 'Content-Type must be application/json' }] });
    }
    const request = new globalThis.Request(`${sb.baseUrl}/graphql`, {
      method: 'POST',
      // graphql-response+json semantics: a document that does not parse or validate is a 400.
      headers: { 'content-type': contentType, accept: 'application/graphql-response+json' },
      body: body.toString('utf8'),
    });
    const response = await yoga.fetch(request, { viewer });
    return {
      status: response.status,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        ...limited,
      },
      body: Buffer.from(await response.arrayBuffer()),
    };
  };
}

export async function startSandbox(input: StartOptions = {}): Promise<RunningSandbox> {
  const o = sandboxOptionsSchema.parse(input);
  const clientSecret = o.demoClientSecret ?? randomBytes(32).toString('base64url');
  const options: SandboxOptions = {
    tenant: o.tenant,
    records: o.records,
    seed: o.seed,
    m2mEnabled: o.m2mEnabled,
    acceptClientCredentialsScope: o.acceptClientCredentialsScope,
    schema: o.schema,
    introspection: o.introspection,
    limits: { complexity: o.limits.complexity ?? undefined, rate: o.limits.rate ?? undefined },
    demoCredential: { clientId: DEMO_CLIENT_ID, secret: clientSecret, label: 'Demo sync (sandbox)' },
  };
  const sb = await Sandbox.create(options);
  const router = new Router();
  router.add('POST', '/graphql', 'graphql', graphqlHandler(sb));
  registerHooks(router, sb);
  registerIdpEndpoints(router, sb);
  registerDevicePage(router, sb);
  router.add('GET', '/', 'portal', () => ({ status: 303, headers: { location: `/${sb.options.tenant}/` } }));
  registerPortal(router, sb);

  const server: Server = createServer((raw: IncomingMessage, res: ServerResponse) => {
    void dispatch(sb, router, raw, res);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  sb.baseUrl = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  return {
    sandbox: sb,
    baseUrl: sb.baseUrl,
    authUrl: sb.authUrl,
    tenant: o.tenant,
    clientId: DEMO_CLIENT_ID,
    clientSecret,
    adminUsername: 'admin',
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function dispatch(
  sb: Sandbox,
  router: Router,
  raw: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const url = new URL(raw.url ?? '/', 'http://sandbox.local');
    const method = raw.method ?? 'GET';
    const found = router.match(method, url.pathname);
    if (!found)
      return send(res, json(404, { error: 'not_found', error_description: `no route ${url.pathname}` }));
    if ('allowed' in found) {
      return send(
        res,
        json(
          405,
          { error: 'method_not_allowed', error_description: `use ${found.allowed.join(' or ')}` },
          { allow: found.allowed.join(', ') },
        ),
      );
    }
    let bodyPromise: Promise<Buffer> | undefined;
    const req: Request = {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: raw.headers,
      params: found.params,
      raw,
      body: (limit = 64 * 1024) => (bodyPromise ??= readBody(raw, limit)),
    };
    let fault: FaultSpec | undefined;
    let reply: Reply | undefined;
    if ((FAULT_ROUTES as readonly string[]).includes(found.route.name)) {
      const route = found.route.name;
      // A fault that matches on the body reads it first (the handler then finds it read, with the same limit).
      const text = sb.faults.wantsBody(route)
        ? (await req.body(route === 'graphql' ? GRAPHQL_BODY_LIMIT : undefined)).toString('utf8')
        : undefined;
      fault = sb.faults.take(route, text);
      if (fault) {
        sb.stats.faults++;
        if (fault.reset) return void raw.socket.destroy();
        if (fault.malformed)
          return send(res, {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: '{"not json',
          });
        if (fault.redirect)
          return send(res, { status: 307, headers: { location: fault.redirect }, body: '' });
        if (fault.handled) {
          // The tenant acts, then only its answer goes wrong: another status, or late.
          reply = await found.route.handler(req);
          if (fault.status !== undefined) return send(res, faultReply(found.route.name, fault));
          await sleep(fault.delayMs ?? 0);
        } else if (fault.delayMs !== undefined) await sleep(fault.delayMs);
        else if (fault.status !== undefined) return send(res, faultReply(found.route.name, fault));
      }
    }
    reply ??= await found.route.handler(req);
    if (fault?.partial) return send(res, withPartialError(reply, fault.message));
    if (fault?.cut) return cutMidBody(res, reply);
    send(res, reply);
  } catch (err) {
    if (err instanceof HttpError) {
      const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
      const type = typeof err.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
      return send(res, {
        status: err.status,
        headers: { 'content-type': type, 'cache-control': 'no-store', ...err.headers },
        body,
      });
    }
    // The caller went away (aborted, timed out): nobody to answer, nothing wrong with the sandbox. Not
    // `raw.destroyed`: Node sets it once a body has been read, when the caller is still waiting.
    if (res.destroyed || raw.socket.destroyed || (err as NodeJS.ErrnoException).code === 'ECONNRESET') return;
    // Never a stack trace to the caller; the message to stderr for whoever runs the sandbox.
    console.error(`sandbox: ${raw.method} ${raw.url?.split('?')[0]} failed: ${(err as Error).message}`);
    send(res, json(500, { error: 'server_error', error_description: 'internal error in the sandbox' }));
  }
}
