import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { randomUUID } from 'node:crypto';
import { isRunning, readInstance, durableCall } from '../durable';
import {
  callerScope,
  claimOrReplay,
  parseIdempotencyKey,
  readJsonText,
  signatureProblem,
} from '../net/accepted';
import { acceptedReply, replayReply, statusReply } from '../request-reply';
import { problem } from '../errors';
import { EXPORT, exportInstanceId, type ExportInput } from './orchestration';
import { MAX_BODY_BYTES, parseExportRequest, requestHash } from './request';
import { exportReply } from './reply';
import type { ExportSetup } from './setup';
import './errors'; // the feature's codes, declared before any is named or read

const BUSY_RETRY_SECONDS = 30;

/**
 * POST /api/exports: checks the body (and signature, when required), honours Idempotency-Key, takes one of
 * the tenant's export slots and starts the export orchestration; 202 with where to poll.
 */
export async function createExport(
  request: HttpRequest,
  client: DurableClient,
  setup: ExportSetup,
): Promise<HttpResponseInit> {
  const read = await readJsonText(request, MAX_BODY_BYTES);
  if ('refused' in read) return read.refused;
  const { text } = read;
  if (setup.requestSecret) {
    const refused = signatureProblem(request, text, await setup.requestSecret());
    if (refused) return refused;
  }
  const key = parseIdempotencyKey(request.headers.get('idempotency-key'));
  const knownStreams = (await setup.streams()).map((s) => s.name);
  const parsed = parseExportRequest(text, {
    knownStreams,
    development: setup.development,
  });
  const problems = [...(key.ok ? [] : key.problems), ...(parsed.ok ? [] : parsed.problems)];
  if (!key.ok || !parsed.ok)
    return problem(400, 'invalid_request', problems.join('; '), {
      members: {
        problems,
        ...(problems.some((p) => p.startsWith('streams: unknown')) ? { knownStreams } : {}),
      },
    });
  const now = setup.clock.now();
  const id = randomUUID();
  // The key the host authenticated: its header takes precedence over ?code= (devhost/host.ts reads it alike).
  const scope = callerScope(request.headers.get('x-functions-key') ?? request.query.get('code'));
  const bodyHash = requestHash(parsed.value);
  if (key.value) {
    // Claimed but not started (yet, or never: its request may still be refused a slot) answers 409.
    const answer = await claimOrReplay(
      setup.keys,
      scope,
      key.value,
      { id, bodyHash, createdAt: new Date(now).toISOString() },
      now,
      {
        noun: 'request',
        replay: (earlier) => replayReply(exportReply(setup), request, client, earlier),
      },
    );
    if (answer !== 'claimed') return answer;
  }
  let slot: boolean;
  try {
    slot = await setup.slots.claimSlot(setup.tenant, setup.maxConcurrent, id, now, async (holder) => {
      const instance = await readInstance(client, exportInstanceId(holder));
      return instance ? isRunning(instance.runtimeStatus) : undefined;
    });
  } catch (err) {
    // Storage failed before any export existed: the key goes back, so a retry with it can start one.
    if (key.value) await setup.keys.releaseKey(scope, key.value).catch(() => undefined);
    throw err;
  }
  if (!slot) {
    if (key.value) await setup.keys.releaseKey(scope, key.value);
    return problem(
      429,
      'too_many_exports',
      `${setup.maxConcurrent} export${setup.maxConcurrent > 1 ? 's are' : ' is'} already running for this tenant (EXPORTS_MAX_CONCURRENT); retry later`,
      { headers: { 'retry-after': String(BUSY_RETRY_SECONDS) } },
    );
  }
  const input: ExportInput = {
    id,
    tenant: setup.tenant,
    ...parsed.value,
    requestedAt: new Date(now).toISOString(),
  };
  try {
    await durableCall('start the export', () =>
      client.startNew(EXPORT.orchestrator, { instanceId: exportInstanceId(id), input }),
    );
  } catch (err) {
    await setup.slots.releaseSlot(setup.tenant, id).catch(() => undefined);
    if (key.value) await setup.keys.releaseKey(scope, key.value).catch(() => undefined);
    setup.logger.log('error', 'export could not start', { reason: (err as Error).message });
    return problem(503, 'service_unavailable', 'the export could not be started; retry', {
      headers: { 'retry-after': '10' },
    });
  }
  setup.logger.log('info', 'export started', {
    instanceId: exportInstanceId(id),
    count: input.streams.length,
  });
  await setup.accepted(input);
  return acceptedReply(exportReply(setup), request, id, 'queued');
}

/** GET /api/exports/{id}: state and progress; when complete, a fresh 15-minute link per file. */
export const exportStatus = (request: HttpRequest, client: DurableClient, setup: ExportSetup) =>
  statusReply(exportReply(setup), request, client);
