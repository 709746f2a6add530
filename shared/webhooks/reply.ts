import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { readInstance } from '../durable';
import { problem } from '../errors';
import { acceptedAnswer, POLL_SECONDS, resourceUrl } from '../net/accepted';
import { guardedPost } from '../net/callback';
import { SignedPoster } from '../net/webhook';

/**
 * The async request-reply kit both webhooks answer with (POST /api/exports, POST /api/imports): the 202 that points at
 * the request's status, the status route, and the signed callback — one set of words, `{ id, status, statusUrl }`.
 * An import also says `state` and `statusUri`, its words before 2026-11-28, kept as aliases until the next major
 * version (docs/import.md). The request's own checks stay with its feature; what they share is in ./net/accepted.ts.
 */
export interface ReplyKind<S extends { id: string }> {
  /** The route's collection (`exports`) and what callers call one request (`export`). */
  collection: string;
  noun: string;
  /** The ids this service issues. */
  id: RegExp;
  instanceId(id: string): string;
  /** The request's state from its orchestration, or undefined when it has none. */
  stateOf(instance: DurableOrchestrationStatus): S | undefined;
  statusOf(state: S): string;
  /** What GET answers and the callback posts. */
  body(state: S): Promise<object>;
  /** Also answer with the words it used before (`state`, `statusUri`). */
  legacyWords?: boolean;
}

const ENDED = new Set(['completed', 'failed']);

/** 202 Accepted: `{ id, status, statusUrl }` with Location and Retry-After (and the legacy words where kept). */
export function acceptedReply<S extends { id: string }>(
  kind: ReplyKind<S>,
  request: HttpRequest,
  id: string,
  status: string,
  replayed = false,
): HttpResponseInit {
  const location = resourceUrl(request, kind.collection, id);
  return acceptedAnswer(
    location,
    { id, status, statusUrl: location, ...(kind.legacyWords ? { state: status, statusUri: location } : {}) },
    replayed,
  );
}

/** The 202 for a request accepted earlier (an Idempotency-Key or signed id replayed), from its orchestration. */
export async function replayReply<S extends { id: string }>(
  kind: ReplyKind<S>,
  request: HttpRequest,
  client: DurableClient,
  id: string,
): Promise<HttpResponseInit | undefined> {
  const existing = await readInstance(client, kind.instanceId(id));
  if (!existing) return undefined;
  const state = kind.stateOf(existing);
  return acceptedReply(kind, request, id, state ? kind.statusOf(state) : 'queued', true);
}

/** GET …/{id}: the request's status body; Retry-After while it has not ended. */
export async function statusReply<S extends { id: string }>(
  kind: ReplyKind<S>,
  request: HttpRequest,
  client: DurableClient,
): Promise<HttpResponseInit> {
  const id = request.params.id ?? '';
  if (!kind.id.test(id))
    return problem(400, 'invalid_request', `the ${kind.noun} id is not one this service issued`);
  const instance = await readInstance(client, kind.instanceId(id));
  const state = instance && kind.stateOf(instance);
  if (!state) return problem(404, 'not_found', `no ${kind.noun} ${id}`);
  return {
    status: 200,
    jsonBody: await kind.body(state),
    headers: ENDED.has(kind.statusOf(state)) ? {} : { 'retry-after': String(POLL_SECONDS) },
  };
}

/** The signed callback: the status body as GET shows it, POSTed the Standard Webhooks way (never to a private host). */
export async function callbackReply<S extends { id: string }>(
  kind: ReplyKind<S>,
  state: S,
  callbackUrl: string,
  options: { secret: () => Promise<string>; clock: { now(): number }; development: boolean },
): Promise<void> {
  const poster = new SignedPoster(callbackUrl, {
    secret: options.secret,
    clock: options.clock,
    post: guardedPost({ development: options.development }),
    refusedHint: 'check the callbackUrl and that the receiver uses the downstream webhook secret',
    unavailableHint: `the ${kind.noun}'s status stays available from GET /api/${kind.collection}/{id}`,
  });
  const status = kind.statusOf(state);
  await poster.post(`${kind.noun}/${state.id}/${status}`, `${kind.noun}.${status}`, await kind.body(state));
}
