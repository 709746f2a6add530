import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import { IntegrationError } from '../errors';
import { timeoutError } from './retry';

/** An HTTP answer read whole: what a JSON API client needs, and nothing of a stream API's per-request cost. */
export interface HttpAnswer {
  status: number;
  header(name: string): string | null;
  text: string;
}

export interface PostOptions {
  headers?: Record<string, string>;
  abortSignal?: AbortSignal;
  /**
   * The whole request — connecting, sending, the answer read to its end — fails with a `TimeoutError` after this
   * long. One timer, where a caller's `withTimeout` takes an AbortController and two listeners more per request.
   */
  timeoutMs?: number;
  /** Answers longer than this fail with code `RESPONSE_TOO_LARGE` instead of filling memory… */
  maxBytes?: number;
  /** …or, with `drop`, are read to the end keeping only the first `maxBytes` (for answers nobody reads). */
  beyondMax?: 'fail' | 'drop';
  /**
   * Resolves the host name at connect time (e.g. to refuse addresses). Such a request gets a connection of its
   * own: a pooled socket would have been resolved without it.
   */
  lookup?: LookupFunction;
}

/** How a POST is sent: `nodePost` by default; `fetchPost` over a given fetch; the export callback's guarded one. */
export type PostText = (url: string, body: string, options: PostOptions) => Promise<HttpAnswer>;

export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

let agents: { http: HttpAgent; https: HttpsAgent } | undefined;
// Kept-alive connections, one pool per process. LIFO reuses the warmest socket, so idle ones age out. An idle
// socket is closed after 30 s, or sooner when the server's `Keep-Alive: timeout=` says so (Node applies that
// hint only below this timeout), so we rarely send on a socket the server has just closed.
const KEEP_ALIVE = { keepAlive: true, scheduling: 'lifo', timeout: 30_000 } as const;
const pool = () => (agents ??= { http: new HttpAgent(KEEP_ALIVE), https: new HttpsAgent(KEEP_ALIVE) });

class AnswerTooLarge extends IntegrationError {
  constructor(message: string) {
    super('response_too_large', message, { status: 502 });
  }
}

interface Target {
  secure: boolean;
  origin: string;
  options: Pick<ReturnType<typeof urlToHttpOptions>, 'protocol' | 'hostname' | 'port' | 'path' | 'auth'>;
}

// A client posts to one or two endpoints all its life: each URL is parsed once, not per request (docs/benchmarks.md,
// "Import").
const targets = new Map<string, Target>();
function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    // Only what a request needs: node:http takes longer with every field of the parsed URL (href, search, …).
    const { protocol, hostname, port, path, auth } = urlToHttpOptions(parsed);
    target = {
      secure: protocol === 'https:',
      origin: parsed.origin,
      options: { protocol, hostname, port, path, ...(auth ? { auth } : {}) },
    };
    if (targets.size >= 64) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/*
 * Whether a failed request can have reached the server: a write may be sent again only where it cannot (docs/import.md,
 * "What 'exactly once' means here"). A connection that was never made — refused, no such host, a timeout while
 * connecting — carried no byte of the request; anything later (a reset, a timeout while waiting, an answer cut off) may
 * have been acted on.
 */
const unsent = new WeakSet<object>();
/** Error codes of a connection that was never made (Node's, and undici's under `fetch`). */
const NEVER_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** True when `err` failed a request before any of it could reach the server (nothing written to a connection). */
export const neverSent = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && unsent.has(err);

function markUnsent(err: unknown): void {
  if (typeof err === 'object' && err !== null) unsent.add(err);
}

/**
 * POST over node:http(s) with kept-alive connections, not `fetch`, which builds web streams per request
 * (docs/benchmarks.md, "Sync").
 * Network errors, resets and aborts reject; any HTTP status resolves.
 */
export const nodePost: PostText = (url, body, options) =>
  new Promise<HttpAnswer>((resolve, reject) => {
    if (options.abortSignal?.aborted) return reject(options.abortSignal.reason as Error);
    const target = targetOf(url);
    const secure = target.secure;
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    let res: IncomingMessage | undefined;
    let timer: NodeJS.Timeout | undefined;
    // Set once a connection exists to write the request on: a pooled one at once, a new one when it connects.
    let connected = false;
    const req = (secure ? httpsRequest : httpRequest)(
      {
        ...target.options,
        method: 'POST',
        ...(options.lookup
          ? { agent: false, lookup: options.lookup }
          : { agent: secure ? pool().https : pool().http }),
        headers: { ...options.headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (answer) => {
        res = answer;
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes && options.beyondMax === 'drop') return;
          if (size > maxBytes) {
            const err = new AnswerTooLarge(`${target.origin} answered with more than ${maxBytes} bytes`);
            answer.destroy(err);
            req.destroy(err);
          } else chunks.push(chunk);
        });
        answer.on('error', fail);
        answer.on('end', () => {
          done();
          resolve({
            status: answer.statusCode ?? 0,
            header: (name) => {
              const v = answer.headers[name.toLowerCase()];
              return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
            },
            text: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    function done() {
      clearTimeout(timer);
      options.abortSignal?.removeEventListener('abort', abort);
    }
    function fail(err: Error) {
      done();
      // The caller's own abort reason is not ours to mark: it may be shared with requests that were sent.
      if (!connected && !options.abortSignal?.aborted) markUnsent(err);
      reject(err);
    }
    function stop(reason: Error) {
      res?.destroy(reason);
      req.destroy(reason);
    }
    function abort() {
      stop(options.abortSignal?.reason as Error);
    }
    options.abortSignal?.addEventListener('abort', abort, { once: true });
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => stop(timeoutError()), options.timeoutMs);
      timer.unref();
    }
    req.on('socket', (socket) => {
      if (socket.connecting) socket.once('connect', () => (connected = true));
      else connected = true;
    });
    req.on('error', fail);
    req.end(body);
  });

/** The same over a `fetch` (one given to the client, e.g. in a test or behind a proxy). */
export const fetchPost =
  (f: typeof fetch): PostText =>
  async (url, body, options) => {
    const { abortSignal, timeoutMs } = options;
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const signal =
      timeout && abortSignal ? AbortSignal.any([abortSignal, timeout]) : (timeout ?? abortSignal);
    // A request carrying the bearer token follows no redirect, as node:http's does not: a 3xx is the answer.
    let res: Response;
    try {
      res = await f(url, { method: 'POST', headers: options.headers, body, signal, redirect: 'manual' });
    } catch (err) {
      const code = ((err as { cause?: { code?: unknown } }).cause ?? {}).code;
      if (typeof code === 'string' && NEVER_CONNECTED.has(code)) markUnsent(err);
      throw err;
    }
    const text = await res.text();
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    if (Buffer.byteLength(text) > maxBytes)
      throw new AnswerTooLarge(`${new URL(url).origin} answered with more than ${maxBytes} bytes`);
    return { status: res.status, header: (name) => res.headers.get(name), text };
  };
