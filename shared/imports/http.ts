import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { randomUUID } from 'node:crypto';
import { durableCall } from '../durable';
import {
  callerScope,
  claimOrReplay,
  parseIdempotencyKey,
  readJsonText,
  replayOf,
  signatureProblem,
} from '../net/accepted';
import { acceptedReply, replayReply, statusReply } from '../request-reply';
import { IntegrationError, problem } from '../errors';
import { boundsProblems, MAX_DEPTH, MAX_ITEM_BYTES } from './body-bounds';
import type { ImportOperation } from './operations';
import { IMPORT, importInstanceId, type ImportInput } from './orchestration';
import { checkImport, importHash, maxBodyBytes, parseImportShape } from './request';
import { importReply } from './reply';
import type { ImportSetup } from './setup';
import { batchDigest } from './store';
import './errors'; // the feature's codes, declared before any is named or read

/** The body's bounds, with the allow-list's variable counts where imports are on. */
function importBounds(maxItems: number, operations: Map<string, ImportOperation> | undefined) {
  const mostDeclared = Math.max(0, ...[...(operations?.values() ?? [])].map((o) => o.variables.length));
  return {
    maxItems,
    maxItemBytes: MAX_ITEM_BYTES,
    maxDepth: MAX_DEPTH,
    maxKeptNames: mostDeclared,
    declaredVariables: (name: string | undefined) => {
      if (name === undefined || !operations) return undefined;
      const operation = operations.get(name);
      if (!operation) return { count: mostDeclared };
      const names = new Set(operation.variables.map((v) => v.variable.name.value));
      return { count: names.size, names };
    },
  };
}

/**
 * POST /api/imports, its checks in order, each before any state: the body's size and type; the signature where
 * IMPORTS_REQUEST_SECRET_NAME asks for one; the body's bounds on its text (items, an item's size, nesting, variables)
 * before anything parses it, then its shape. A key already used — the Idempotency-Key, and a signed request's
 * `webhook-id`, which the signature covers — answers the import it named before anything else is looked at (the
 * allow-list, the tenant, the session may all have changed since). Then imports switched on (IMPORT_OPERATIONS_FILE
 * outside development) and the body whole — operation on the allow-list, unique keys, every item's variables
 * (400/422). Only a new import needs a signed-in admin (409). Then the items are stored and the import orchestration
 * starts: 202 with where to poll.
 */
export async function createImport(
  request: HttpRequest,
  client: DurableClient,
  setup: ImportSetup,
): Promise<HttpResponseInit> {
  const read = await readJsonText(request, maxBodyBytes(setup.maxItems));
  if ('refused' in read) return read.refused;
  const { text } = read;
  if (setup.requestSecret) {
    const refused = signatureProblem(request, text, await setup.requestSecret());
    if (refused) return refused;
  }
  const key = parseIdempotencyKey(request.headers.get('idempotency-key'));
  if (!key.ok)
    return problem(400, 'invalid_request', key.problems.join('; '), { members: { problems: key.problems } });
  // The allow-list, or why imports are off: told after a replay has had its answer.
  let operations: Map<string, ImportOperation> | undefined;
  let disabled: string | undefined;
  try {
    operations = await setup.operations();
  } catch (err) {
    if (!(err instanceof IntegrationError && err.code === 'imports_disabled')) throw err;
    disabled = err.message;
  }
  const webhookId = setup.requestSecret ? request.headers.get('webhook-id') : null;
  // With imports off, only a replay of an import accepted earlier has an answer beyond saying so.
  if (disabled && !key.value && !webhookId) return problem(403, 'imports_disabled', disabled);
  const tooBig = boundsProblems(text, importBounds(setup.maxItems, operations));
  if (tooBig.length)
    return problem(400, 'invalid_request', tooBig.join('; '), { members: { problems: tooBig } });
  const shape = parseImportShape(text, setup.maxItems);
  if (!shape.ok)
    return problem(400, 'invalid_request', shape.problems.join('; '), {
      members: { problems: shape.problems },
    });
  const body = shape.value;
  const now = setup.clock.now();
  const id = randomUUID();
  const caller = `imports-${callerScope(request.headers.get('x-functions-key') ?? request.query.get('code'))}`;
  const record = { id, bodyHash: importHash(body), createdAt: new Date(now).toISOString() };
  // The keys this request is known by: a signed request's webhook-id (a replay of it within the signature's
  // tolerance names the same id, which no one can change without the secret), and its Idempotency-Key.
  const keys = [
    ...(webhookId ? [{ scope: `${caller}-webhook-id`, value: webhookId }] : []),
    ...(key.value ? [{ scope: caller, value: key.value }] : []),
  ];
  const replay = (earlier: string) => replayReply(importReply(setup), request, client, earlier);
  for (const k of keys) {
    const answer = await replayOf(setup.keys, k.scope, k.value, record.bodyHash, now, {
      noun: 'import',
      replay,
    });
    if (answer) return answer;
  }
  if (disabled || !operations) return problem(403, 'imports_disabled', disabled ?? 'imports are off');
  const parsed = checkImport(body, {
    operations,
    development: setup.development,
    schema: await setup.schema(),
  });
  if (!parsed.ok && parsed.code === 'operations_invalid')
    return problem(422, parsed.code, parsed.problems.join('; '));
  if (!parsed.ok)
    return problem(400, parsed.code, parsed.problems.join('; '), {
      members: {
        problems: parsed.problems,
        ...(parsed.code === 'unknown_operation' ? { knownOperations: [...operations.keys()] } : {}),
      },
    });
  const { operation } = parsed;
  // Claimed in turn; a key another request holds answers for it, and the keys claimed before it go back.
  const claimed: typeof keys = [];
  const release = () =>
    Promise.all(claimed.map((k) => setup.keys.releaseKey(k.scope, k.value).catch(() => undefined)));
  for (const k of keys) {
    const answer = await claimOrReplay(setup.keys, k.scope, k.value, record, now, { noun: 'import', replay });
    if (answer !== 'claimed') {
      await release();
      return answer;
    }
    claimed.push(k);
  }
  const session = await setup.session().catch(async (err: unknown) => {
    await release();
    throw err;
  });
  if (session?.state !== 'connected') {
    // Nothing was started: the key is free again for the same request once an admin has signed in.
    await release();
    return problem(
      409,
      'admin_login_required',
      `imports run with an admin's session and ${session ? `the last one needs a new sign-in (${session.reason ?? 'refresh refused'})` : 'no admin has signed in'}: sign in on the admin page (/api/manage) or with \`tenant-integrations login\`, then send the import again`,
      { members: { adminPage: '/api/manage' } },
    );
  }
  const input: ImportInput = {
    id,
    tenant: setup.tenant,
    operation: body.operation,
    total: body.items.length,
    requestedAt: new Date(now).toISOString(),
    adminWaitMs: setup.adminWaitMs,
    // The admin it is accepted under: only that person's session applies it, now or after a wait.
    person: session.username,
    ...(body.callbackUrl ? { callbackUrl: body.callbackUrl } : {}),
  };
  const batch = { operation: body.operation, document: operation.document, items: body.items };
  input.digest = batchDigest(batch);
  try {
    await setup.store.saveBatch(id, batch);
    await durableCall('start the import', () =>
      client.startNew(IMPORT.orchestrator, { instanceId: importInstanceId(id), input }),
    );
  } catch (err) {
    await release();
    setup.logger.log('error', 'import could not start', { reason: (err as Error).message.split('\n')[0] });
    return problem(503, 'service_unavailable', 'the import could not be started; retry', {
      headers: { 'retry-after': '10' },
    });
  }
  setup.logger.log('info', 'import started', { runId: id, operation: body.operation, count: input.total });
  await setup.accepted(input);
  return acceptedReply(importReply(setup), request, id, 'queued');
}

/** GET /api/imports/{id}: state, counts and a result per item. */
export const importStatus = (request: HttpRequest, client: DurableClient, setup: ImportSetup) =>
  statusReply(importReply(setup), request, client);
