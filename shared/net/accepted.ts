import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import { Webhook } from 'standardwebhooks';
import type { DurableOrchestrationStatus } from 'durable-functions';
import { problem } from '../errors';
import { createHash } from 'node:crypto';
import { z } from 'zod';

/*
 * What the two async request-reply webhooks (POST /api/exports, POST /api/imports) share: reading a JSON body
 * bounded in size, the address of the resource they start, the 202 that points at it, how a stopped orchestration
 * reads, Idempotency-Key replays, and a 503 instead of a bare 500 when storage or the durable store fails. Nothing
 * here loads an SDK: the webhooks' modules are loaded when the functions register.
 */

/** A parsed request part, or every problem with it. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problems: string[] };

const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'at most 255 characters')
  .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only');

/** An export request with its defaults filled in: what an export is, and what Idempotency-Key compares. */

export function parseIdempotencyKey(value: string | null): Parsed<string | undefined> {
  if (value === null) return { ok: true, value: undefined };
  const r = idempotencyKeySchema.safeParse(value);
  return r.success
    ? { ok: true, value: r.data }
    : { ok: false, problems: r.error.issues.map((i) => `Idempotency-Key: ${i.message}`) };
}

/** Who is calling, as far as idempotency is concerned: a hash of the function key presented. */
export function callerScope(key: string | null): string {
  return createHash('sha256')
    .update(key ?? '')
    .digest('hex')
    .slice(0, 32);
}

/** What an Idempotency-Key names: the request it started and its body's hash (shared/state/idempotency.ts keeps them). */
export interface KeyRecord {
  id: string;
  bodyHash: string;
  createdAt: string;
}

/** Where Idempotency-Keys are claimed: the first claim of a key wins, later ones get its record. */
export interface KeyClaims {
  claimKey(scope: string, key: string, record: KeyRecord, nowMs: number): Promise<KeyRecord | 'claimed'>;
  /** The record a key names now, unless it names none (or its claim has expired). */
  findKey(scope: string, key: string, nowMs: number): Promise<KeyRecord | undefined>;
  /**
   * Takes over a claim whose request never started (`stale`, as read): `'claimed'`, or the key's record where
   * another request took it over first.
   */
  reclaimKey(scope: string, key: string, record: KeyRecord, stale: KeyRecord): Promise<KeyRecord | 'claimed'>;
  /** Gives a claimed key back: its request was refused, or its start failed for sure. */
  releaseKey(scope: string, key: string): Promise<void>;
}

/**
 * A key claimed this long ago whose request has not started is free again: the starter died between claiming it and
 * starting what it names (a start takes milliseconds), and the key must not answer 409 for a day.
 */
export const STALE_CLAIM_MS = 60_000;

/** How often callers are told to poll a running export or import. */
export const POLL_SECONDS = 5;

/**
 * The body, or undefined as soon as it is known to be over `max` bytes (by Content-Length, or once that much
 * has arrived): a large or endless body is never read whole.
 */
export async function readBodyUpTo(request: HttpRequest, max: number): Promise<Buffer | undefined> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > max) return undefined;
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
}

/** A JSON body as text: 415 for another content type, 413 past `max` bytes, 400 when it is not UTF-8. */
export async function readJsonText(
  request: HttpRequest,
  max: number,
): Promise<{ text: string } | { refused: HttpResponseInit }> {
  const type = request.headers.get('content-type');
  if (type && !/^\s*application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type))
    return { refused: problem(415, 'unsupported_media_type', 'send the body as application/json') };
  const bytes = await readBodyUpTo(request, max);
  if (!bytes) return { refused: problem(413, 'payload_too_large', `the body may be at most ${max} bytes`) };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return {
      refused: problem(400, 'invalid_request', 'the body is not UTF-8 text', {
        members: { problems: ['body: not UTF-8'] },
      }),
    };
  }
}

/**
 * A signed request (EXPORTS_REQUEST_SECRET_NAME, IMPORTS_REQUEST_SECRET_NAME): 401 `invalid_signature` unless the
 * body carries a Standard Webhooks signature made with `secret` within the library's tolerance; undefined when it does.
 */
export function signatureProblem(
  request: HttpRequest,
  text: string,
  secret: string,
): HttpResponseInit | undefined {
  try {
    new Webhook(secret).verify(text, {
      'webhook-id': request.headers.get('webhook-id') ?? '',
      'webhook-timestamp': request.headers.get('webhook-timestamp') ?? '',
      'webhook-signature': request.headers.get('webhook-signature') ?? '',
    });
    return undefined;
  } catch (err) {
    return problem(
      401,
      'invalid_signature',
      `the Standard Webhooks signature does not verify: ${(err as Error).message}`,
    );
  }
}

/** `…/api/{collection}/{id}` from the request that created it (or asked after it), without its query. */
export function resourceUrl(request: HttpRequest, collection: string, id: string): string {
  const url = new URL(request.url);
  url.pathname = `${url.pathname.replace(new RegExp(`/${collection}/?$`), '')}/${collection}/${id}`;
  url.search = '';
  return url.href;
}

/** 202 Accepted with Location and Retry-After, and `body` (which names the same address). */
export function acceptedAnswer(
  location: string,
  body: Record<string, unknown>,
  replayed = false,
): HttpResponseInit {
  return {
    status: 202,
    jsonBody: body,
    headers: {
      location,
      'retry-after': String(POLL_SECONDS),
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
    },
  };
}

/** Why an orchestration ended without reporting its own end (failed, terminated), or undefined while it has not. */
export function stoppedEarly(instance: DurableOrchestrationStatus, what: string): string | undefined {
  if (!['Failed', 'Terminated', 'Canceled'].includes(instance.runtimeStatus)) return undefined;
  return `the ${what} stopped (${instance.runtimeStatus.toLowerCase()}): ${String(instance.output ?? 'no reason given').slice(0, 300)}`;
}

const inProgress = (noun: string) =>
  problem(
    409,
    'idempotency_key_in_progress',
    `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun} with this Idempotency-Key is still being started; retry shortly`,
  );

const reused = (noun: string, id: string) =>
  problem(
    422,
    'idempotency_key_reused',
    `this Idempotency-Key was used with a different ${noun} in the last 24 hours; use a new key`,
    { members: { id } },
  );

/**
 * Idempotency-Key: claims `key` for a new request (`'claimed'`), or answers as the earlier request with that key did: 422 when its
 * body differed, `replay` of what it started, or 409 while that is not started yet (a key never answers 202 for
 * something that does not exist) — unless its claim is older than STALE_CLAIM_MS: then this request takes it over.
 * `noun` names what callers request ("request", "import").
 */
export async function claimOrReplay(
  ledger: KeyClaims,
  scope: string,
  key: string,
  record: KeyRecord,
  nowMs: number,
  options: { noun: string; replay: (id: string) => Promise<HttpResponseInit | undefined> },
): Promise<'claimed' | HttpResponseInit> {
  const claimed = await ledger.claimKey(scope, key, record, nowMs);
  if (claimed === 'claimed') return claimed;
  if (claimed.bodyHash !== record.bodyHash) return reused(options.noun, claimed.id);
  const replayed = await options.replay(claimed.id);
  if (replayed) return replayed;
  if (nowMs - Date.parse(claimed.createdAt) < STALE_CLAIM_MS) return inProgress(options.noun);
  const again = await ledger.reclaimKey(scope, key, record, claimed);
  if (again === 'claimed') return again;
  return (await options.replay(again.id)) ?? inProgress(options.noun);
}

/**
 * What an already claimed key answers, looked up before the request is checked any further — so a replay of an
 * accepted request names what it started whatever has changed since (the allow-list, the tenant's availability):
 * its replay, 422 for another body, 409 while it is being started. Undefined where the key names nothing (or a claim
 * gone stale): the request goes on to be checked and claimed.
 */
export async function replayOf(
  ledger: KeyClaims,
  scope: string,
  key: string,
  bodyHash: string,
  nowMs: number,
  options: { noun: string; replay: (id: string) => Promise<HttpResponseInit | undefined> },
): Promise<HttpResponseInit | undefined> {
  const found = await ledger.findKey(scope, key, nowMs);
  if (!found) return undefined;
  if (found.bodyHash !== bodyHash) return reused(options.noun, found.id);
  const replayed = await options.replay(found.id);
  if (replayed) return replayed;
  return nowMs - Date.parse(found.createdAt) < STALE_CLAIM_MS ? inProgress(options.noun) : undefined;
}
