import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock';
import { durableCall, readInstance } from '../durable';
import { problem } from '../errors';
import type { Logger } from '../log';
import {
  callerScope,
  claimOrReplay,
  parseIdempotencyKey,
  readJsonText,
  replayOf,
  signatureProblem,
  type KeyClaims,
} from '../net/accepted';
import { acceptedReply, replayReply, type ReplyKind } from './reply';

/**
 * How a webhook accepts a request that starts a run (POST /api/exports, POST /api/imports) — one way for every
 * feature: the body read within its bound, the signature where one is required, the Idempotency-Key (and a signed
 * request's `webhook-id`) looked up, claimed and released in one place, under one scope (`<collection>-<caller>`), and
 * a start whose answer was lost found before a key is ever released. The feature says what its request is (`parse`),
 * what it checks against state (`check`), what it takes for the run (`prepare`) and what starts it.
 */
export interface AcceptSpec<V, I, S extends { id: string }> {
  /** The route's words and its instances (the 202, replays). */
  reply: ReplyKind<S>;
  /** The orchestration that runs an accepted request. */
  orchestrator: string;
  maxBodyBytes: number;
  /** The secret callers sign requests with, when they must. */
  secret?: () => Promise<string>;
  /** Where keys are claimed: the feature's own ledger. */
  keys: KeyClaims;
  clock: Clock;
  logger: Logger;
  /**
   * The feature is switched off (imports without an allow-list): a request no key could name as an earlier one is
   * answered this at once, whatever its body.
   */
  closed?(): Promise<HttpResponseInit | undefined>;
  /** The body as the feature's request, or a 4xx — before any state; `bodyHash` is what a key's replay compares. */
  parse(text: string): Promise<{ value: V; bodyHash: string } | { refused: HttpResponseInit }>;
  /** Checks against state, once no key has named an earlier request (an allow-list, the feature switched off). */
  check?(value: V): Promise<HttpResponseInit | undefined>;
  /**
   * Once the keys are claimed: the run's input, or a refusal (the keys go back). `undo` gives back what it took
   * should the start fail for sure.
   */
  prepare(
    value: V,
    id: string,
    nowMs: number,
  ): Promise<{ input: I; undo?: () => Promise<void> } | { refused: HttpResponseInit }>;
  /** The run exists: its history and trace begin. */
  accepted(input: I): Promise<void>;
}

const unavailable = (noun: string) =>
  problem(
    503,
    'service_unavailable',
    `the ${noun} could not be started; retry with the same Idempotency-Key`,
    {
      headers: { 'retry-after': '10' },
    },
  );

export async function acceptRequest<V, I, S extends { id: string }>(
  request: HttpRequest,
  client: DurableClient,
  spec: AcceptSpec<V, I, S>,
): Promise<HttpResponseInit> {
  const { reply } = spec;
  const read = await readJsonText(request, spec.maxBodyBytes);
  if ('refused' in read) return read.refused;
  const { text } = read;
  const secret = spec.secret && (await spec.secret());
  if (secret) {
    const refused = signatureProblem(request, text, secret);
    if (refused) return refused;
  }
  const key = parseIdempotencyKey(request.headers.get('idempotency-key'));
  if (!key.ok)
    return problem(400, 'invalid_request', key.problems.join('; '), { members: { problems: key.problems } });
  // The key the host authenticated (its header before ?code=, as the host reads it), scoped by the collection.
  const scope = `${reply.collection}-${callerScope(request.headers.get('x-functions-key') ?? request.query.get('code'))}`;
  // The keys this request is known by: a signed request's webhook-id (which the signature covers: a replay within
  // its tolerance names the same id, which no one can change without the secret), and its Idempotency-Key.
  const webhookId = secret ? request.headers.get('webhook-id') : null;
  const keys = [
    ...(webhookId ? [{ scope: `${scope}-webhook-id`, value: webhookId }] : []),
    ...(key.value ? [{ scope, value: key.value }] : []),
  ];
  if (!keys.length) {
    const closed = await spec.closed?.();
    if (closed) return closed;
  }
  const parsed = await spec.parse(text);
  if ('refused' in parsed) return parsed.refused;
  const nowMs = spec.clock.now();
  const id = randomUUID();
  const record = { id, bodyHash: parsed.bodyHash, createdAt: new Date(nowMs).toISOString() };
  const options = {
    noun: reply.noun,
    replay: (earlier: string) => replayReply(reply, request, client, earlier),
  };
  // A key that names an earlier request answers as it did, whatever has changed since (an allow-list, a session).
  for (const k of keys) {
    const answer = await replayOf(spec.keys, k.scope, k.value, record.bodyHash, nowMs, options);
    if (answer) return answer;
  }
  const refused = await spec.check?.(parsed.value);
  if (refused) return refused;

  const claimed: typeof keys = [];
  const release = () =>
    Promise.all(claimed.map((k) => spec.keys.releaseKey(k.scope, k.value).catch(() => undefined)));
  for (const k of keys) {
    const answer = await claimOrReplay(spec.keys, k.scope, k.value, record, nowMs, options);
    if (answer !== 'claimed') {
      await release();
      return answer;
    }
    claimed.push(k);
  }
  let prepared: Awaited<ReturnType<AcceptSpec<V, I, S>['prepare']>>;
  try {
    prepared = await spec.prepare(parsed.value, id, nowMs);
  } catch (err) {
    await release(); // nothing was started
    throw err;
  }
  if ('refused' in prepared) {
    await release();
    return prepared.refused;
  }
  const { input, undo } = prepared;
  const instanceId = reply.instanceId(id);
  try {
    await durableCall(`start the ${reply.noun}`, () =>
      client.startNew(spec.orchestrator, { instanceId, input }),
    );
  } catch (err) {
    // The start may have been made and only its answer lost: the instance is read back before anything is given back,
    // so a retry with the same key answers as this request and never starts a second run.
    let made: boolean | undefined;
    try {
      made = Boolean(await readInstance(client, instanceId));
    } catch {
      made = undefined; // not known: the keys stay claimed (a retry finds them; after STALE_CLAIM_MS they are free)
    }
    spec.logger.log(made ? 'warn' : 'error', `${reply.noun} start answered with an error`, {
      runId: id,
      reason: (err as Error).message.split('\n')[0],
      state: made === undefined ? 'not known to have started' : made ? 'started' : 'not started',
    });
    if (!made) {
      if (made === false) {
        await undo?.().catch(() => undefined);
        await release();
      }
      return unavailable(reply.noun);
    }
  }
  spec.logger.log('info', `${reply.noun} started`, { runId: id, instanceId });
  await spec.accepted(input);
  return acceptedReply(reply, request, id, 'queued');
}
