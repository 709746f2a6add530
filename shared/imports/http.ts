import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { randomUUID } from 'node:crypto';
import { readInstance } from '../durable';
import {
  acceptedAnswer,
  claimOrReplay,
  POLL_SECONDS,
  readJsonText,
  resourceUrl,
  stoppedEarly,
} from '../net/accepted';
import { problem } from '../errors';
import { callerScope, parseIdempotencyKey } from '../exports/request';
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
 * POST /api/imports: an admin's session must be there; the body is checked whole — operation on the allow-list,
 * unique keys, every item's variables — before anything is accepted; Idempotency-Key as the export webhook
 * honours it. Then the items are stored and the import orchestration starts: 202 with where to poll.
 */
export async function createImport(
  request: HttpRequest,
  client: DurableClient,
  setup: ImportSetup,
): Promise<HttpResponseInit> {
  const read = await readJsonText(request, maxBodyBytes(setup.maxItems));
  if ('refused' in read) return read.refused;
  const { text } = read;
  const session = await setup.session();
  if (session?.state !== 'connected')
    return problem(
      409,
      'admin_login_required',
      `imports run with an admin's session and ${session ? `the last one needs a new sign-in (${session.reason ?? 'refresh refused'})` : 'no admin has signed in'}: sign in on the admin page (/api/manage) or with \`tenant-integrations login\`, then send the import again`,
      { members: { adminPage: '/api/manage' } },
    );
  const key = parseIdempotencyKey(request.headers.get('idempotency-key'));
  if (!key.ok)
    return problem(400, 'invalid_request', key.problems.join('; '), { members: { problems: key.problems } });
  const operations = await setup.operations();
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
  const bodyHash = importHash(body);
  if (key.value) {
    const answer = await claimOrReplay(
      setup.keys,
      scope,
      key.value,
      { exportId: id, bodyHash, createdAt: new Date(now).toISOString() },
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
  const input: ImportInput = {
    id,
    tenant: setup.tenant,
    operation: body.operation,
    total: body.items.length,
    requestedAt: new Date(now).toISOString(),
    adminWaitMs: setup.adminWaitMs,
    ...(body.callbackUrl ? { callbackUrl: body.callbackUrl } : {}),
  };
  try {
    await setup.store.saveBatch(id, {
      operation: body.operation,
      document: operation.document,
      items: body.items,
    });
    await client.startNew(IMPORT.orchestrator, { instanceId: importInstanceId(id), input });
  } catch (err) {
    if (key.value) await setup.keys.releaseKey(scope, key.value).catch(() => undefined);
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
