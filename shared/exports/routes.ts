import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { isRunning, readInstance } from '../durable';
import { acceptRequest } from '../webhooks/accept';
import { statusReply } from '../webhooks/reply';
import { problem } from '../errors';
import { EXPORT, exportInstanceId, type ExportInput, type ExportState } from './orchestration';
import { MAX_BODY_BYTES, parseExportRequest, requestHash, type ExportRequest } from './request';
import { exportReply } from './reply';
import type { ExportParts } from './parts';

const BUSY_RETRY_SECONDS = 30;

/**
 * POST /api/exports, accepted the one way every webhook is (shared/webhooks/accept.ts): the body (and its signature,
 * when required) checked, Idempotency-Key honoured; then one of the tenant's export slots (429 when none is free) and
 * the export orchestration started; 202 with where to poll.
 */
export async function createExport(
  request: HttpRequest,
  client: DurableClient,
  setup: ExportParts,
): Promise<HttpResponseInit> {
  return acceptRequest<ExportRequest, ExportInput, ExportState>(request, client, {
    reply: exportReply(setup),
    orchestrator: EXPORT.orchestrator,
    maxBodyBytes: MAX_BODY_BYTES,
    secret: setup.requestSecret,
    keys: setup.keys,
    clock: setup.clock,
    logger: setup.logger,
    async parse(text) {
      const knownStreams = (await setup.streams()).map((s) => s.name);
      const parsed = parseExportRequest(text, { knownStreams, development: setup.development });
      if (!parsed.ok)
        return {
          refused: problem(400, 'invalid_request', parsed.problems.join('; '), {
            members: {
              problems: parsed.problems,
              ...(parsed.problems.some((p) => p.startsWith('streams: unknown')) ? { knownStreams } : {}),
            },
          }),
        };
      return { value: parsed.value, bodyHash: requestHash(parsed.value) };
    },
    async prepare(value, id, now) {
      const slot = await setup.slots.claimSlot(setup.tenant, setup.maxConcurrent, id, now, async (holder) => {
        const instance = await readInstance(client, exportInstanceId(holder));
        return instance ? isRunning(instance.runtimeStatus) : undefined;
      });
      if (!slot)
        return {
          refused: problem(
            429,
            'too_many_exports',
            `${setup.maxConcurrent} export${setup.maxConcurrent > 1 ? 's are' : ' is'} already running for this tenant (EXPORTS_MAX_CONCURRENT); retry later`,
            { headers: { 'retry-after': String(BUSY_RETRY_SECONDS) } },
          ),
        };
      const input: ExportInput = {
        id,
        tenant: setup.tenant,
        ...value,
        requestedAt: new Date(now).toISOString(),
      };
      return { input, undo: () => setup.slots.releaseSlot(setup.tenant, id) };
    },
    accepted: (input) => setup.accepted(input),
  });
}

/** GET /api/exports/{id}: state and progress; when complete, a fresh 15-minute link per file. */
export const exportStatus = (request: HttpRequest, client: DurableClient, setup: ExportParts) =>
  statusReply(exportReply(setup), request, client);
