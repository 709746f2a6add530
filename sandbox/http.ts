import type { IncomingMessage, ServerResponse } from 'node:http';

/** An error the sandbox answers with a status and a body; never a stack trace. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === 'object' && body && 'error' in body ? String(body.error) : `HTTP ${status}`);
  }
}

/** OAuth-style error body, as Keycloak sends it. */
export const oauthError = (
  status: number,
  error: string,
  description: string,
  headers?: Record<string, string>,
) => new HttpError(status, { error, error_description: description }, headers);

export interface Request {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  params: Record<string, string>;
  raw: IncomingMessage;
  /** Reads the body once, refusing more than `limitBytes`. */
  body(limitBytes?: number): Promise<Buffer>;
}

export interface Reply {
  status: number;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
}

export const json = (
  status: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
): Reply => ({
  status,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  body: JSON.stringify(body),
});

export const html = (
  status: number,
  body: string,
  headers: Record<string, string | string[]> = {},
): Reply => ({
  status,
  headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers },
  body,
});

export const redirect = (location: string, headers: Record<string, string | string[]> = {}): Reply => ({
  status: 303,
  headers: { location, ...headers },
});

export const DEFAULT_BODY_LIMIT = 64 * 1024;

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes)
    throw new HttpError(413, {
      error: 'invalid_request',
      error_description: `body larger than ${limitBytes} bytes`,
    });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limitBytes) {
      throw new HttpError(413, {
        error: 'invalid_request',
        error_description: `body larger than ${limitBytes} bytes`,
      });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export const mediaType = (req: Request) =>
  String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();

/** Parses an application/x-www-form-urlencoded body; anything else is a 400 naming the content type. */
export async function readForm(req: Request): Promise<URLSearchParams> {
  if (mediaType(req) !== 'application/x-www-form-urlencoded') {
    throw oauthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
  }
  return new URLSearchParams((await req.body()).toString('utf8'));
}

/** Parses a JSON object body; a 400 names what was wrong. */
export async function readJson(req: Request, limitBytes = DEFAULT_BODY_LIMIT): Promise<unknown> {
  if (mediaType(req) !== 'application/json') {
    throw new HttpError(400, {
      error: 'invalid_request',
      error_description: 'Content-Type must be application/json',
    });
  }
  const text = (await req.body(limitBytes)).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, { error: 'invalid_request', error_description: 'body is not valid JSON' });
  }
}

export type Handler = (req: Request) => Promise<Reply> | Reply;

interface Route {
  method: string;
  pattern: RegExp;
  /** Name used by fault injection and stats, e.g. `token`, `graphql`. */
  name: string;
  handler: Handler;
  isStatic: boolean;
}

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, path: string, name: string, handler: Handler): this {
    // `/a/:b/c` → named groups; parameters never match `/`.
    const source = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, '(?<$1>[^/]+)');
    this.routes.push({
      method,
      pattern: new RegExp(`^${source}$`),
      name,
      handler,
      isStatic: !path.includes(':'),
    });
    return this;
  }

  match(
    method: string,
    path: string,
  ): { route: Route; params: Record<string, string> } | { allowed: string[] } | undefined {
    const allowed: string[] = [];
    let staticPathMatched = false;
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        // A static path that exists for another method wins over a later pattern (`/graphql` vs `/:tenant`).
        if (staticPathMatched && !route.isStatic) break;
        const params = Object.fromEntries(
          Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]),
        );
        return { route, params };
      }
      allowed.push(route.method);
      staticPathMatched ||= route.isStatic;
    }
    return allowed.length ? { allowed } : undefined;
  }
}

export function send(res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(reply.status, reply.headers);
  res.end(reply.body);
}

export const escapeHtml = (s: string): string =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
