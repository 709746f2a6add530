import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { randomUUID } from 'node:crypto';
import { readInstance, durableCall } from '../durable';
import {
  acceptedAnswer,
  callerScope,
  claimOrReplay,
  parseIdempotencyKey,
  POLL_SECONDS,
  readJsonText,
  resourceUrl,
  signatureProblem,
  stoppedEarly,
} from '../net/accepted';
import { IntegrationError, problem } from '../errors';
import { boundsProblems, MAX_DEPTH, MAX_ITEM_BYTES } from './body-bounds';
import type { ImportOperation } from './operations';
import {
  IMPORT,
  IMPORT_ID,
  importInputSchema,
  importInstanceId,
  importState,
  importStateSchema,
  type ImportInput,
  type ImportState,
} from './orchestration';
import { importHash, maxBodyBytes, parseImportRequest } from './request';
import { publicImport } from './run';
import type { ImportSetup } from './setup';

/** The import's state from its orchestration: queued until it has reported, failed if it stopped unexpectedly. */
export function importStateOf(instance: DurableOrchestrationStatus): ImportState | undefined {
  const reported = importStateSchema.safeParse(instance.customStatus);
  const input = importInputSchema.safeParse(instance.input);
  let state = reported.success ? reported.data : undefined;
  if (!state && input.success) state = importState(input.data, 'queued');
  if (!state) return undefined;
  const stopped = stoppedEarly(instance, 'import');
  if (stopped && state.state !== 'completed' && state.state !== 'failed')
    return { ...state, state: 'failed', error: { code: 'run_stopped', message: stopped } };
  return state;
}

function accepted(request: HttpRequest, id: string, state: string, replayed = false): HttpResponseInit {
  const location = resourceUrl(request, 'imports', id);
  return acceptedAnswer(location, { id, state, statusUri: location }, replayed);
}

/**
 * POST /api/imports, its checks in order, each before any state: the body's size and type; imports switched on
 * (IMPORT_OPERATIONS_FILE outside development); the signature where IMPORTS_REQUEST_SECRET_NAME asks for one; the
 * body's bounds on its text (items, an item's size, nesting, variables) before anything parses it; then the body
 * whole — operation on the allow-list, unique keys, every item's variables (400/422, whatever the session's state).
 * An Idempotency-Key already used answers the import it named (before the session is looked at); only a new import
 * needs a signed-in admin (409). Then the items are stored and the import orchestration starts: 202 with where to poll.
 */
export async function createImport(
  request: HttpRequest,
  client: DurableClient,
  setup: ImportSetup,
): Promise<HttpResponseInit> {
  const read = await readJsonText(request, maxBodyBytes(setup.maxItems));
  if ('refused' in read) return read.refused;
  const { text } = read;
  let operations: Map<string, ImportOperation>;
  try {
    operations = await setup.operations();
  } catch (err) {
    if (err instanceof IntegrationError && err.code === 'imports_disabled')
      return problem(403, 'imports_disabled', err.message);
    throw err;
  }
  if (setup.requestSecret) {
    const refused = signatureProblem(request, text, await setup.requestSecret());
    if (refused) return refused;
  }
  const mostDeclared = Math.max(0, ...[...operations.values()].map((o) => o.variables.length));
  const tooBig = boundsProblems(text, {
    maxItems: setup.maxItems,
    maxItemBytes: MAX_ITEM_BYTES,
    maxDepth: MAX_DEPTH,
    maxKeptNames: mostDeclared,
    declaredVariables: (name) => {
      if (name === undefined) return undefined;
      const operation = operations.get(name);
      if (!operation) return { count: mostDeclared };
      const names = new Set(operation.variables.map((v) => v.variable.name.value));
      return { count: names.size, names };
    },
  });
  if (tooBig.length)
    return problem(400, 'invalid_request', tooBig.join('; '), { members: { problems: tooBig } });
  const key = parseIdempotencyKey(request.headers.get('idempotency-key'));
  if (!key.ok)
    return problem(400, 'invalid_request', key.problems.join('; '), { members: { problems: key.problems } });
  const parsed = parseImportRequest(text, {
    operations,
    maxItems: setup.maxItems,
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
  const { value: body, operation } = parsed;
  const now = setup.clock.now();
  const id = randomUUID();
  const scope = `imports-${callerScope(request.headers.get('x-functions-key') ?? request.query.get('code'))}`;
  if (key.value) {
    const answer = await claimOrReplay(
      setup.keys,
      scope,
      key.value,
      { id, bodyHash: importHash(body), createdAt: new Date(now).toISOString() },
      now,
      {
        noun: 'import',
        replay: async (earlier) => {
          const existing = await readInstance(client, importInstanceId(earlier));
          return existing && accepted(request, earlier, importStateOf(existing)?.state ?? 'queued', true);
        },
      },
    );
    if (answer !== 'claimed') return answer;
  }
  const release = () =>
    key.value ? setup.keys.releaseKey(scope, key.value).catch(() => undefined) : Promise.resolve();
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
  try {
    await setup.store.saveBatch(id, {
      operation: body.operation,
      document: operation.document,
      items: body.items,
    });
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
  return accepted(request, id, 'queued');
}

/** GET /api/imports/{id}: state, counts and a result per item. */
export async function importStatus(
  request: HttpRequest,
  client: DurableClient,
  setup: ImportSetup,
): Promise<HttpResponseInit> {
  const id = request.params.id ?? '';
  if (!IMPORT_ID.test(id))
    return problem(400, 'invalid_request', 'the import id is not one this service issued');
  const instance = await readInstance(client, importInstanceId(id));
  const state = instance && importStateOf(instance);
  if (!state) return problem(404, 'not_found', `no import ${id}`);
  const busy = !['completed', 'failed'].includes(state.state);
  return {
    status: 200,
    jsonBody: await publicImport(setup, state),
    headers: busy ? { 'retry-after': String(POLL_SECONDS) } : {},
  };
}
