import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient } from 'durable-functions';
import { z } from 'zod';
import type { App } from '../app';
import { isRunning, readInstance } from '../durable';
import { problem } from '../errors';
import { SYNC, syncInstanceId, type SyncStatus } from '../sync/orchestration';

const listQuery = z
  .object({
    kind: z.enum(['sync', 'export']).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    before: z.iso.datetime().optional(),
  })
  .strict();

/** GET /api/manage/runs?kind=&limit=&before= — newest first; `next` pages on with `before`. */
export async function listRuns(request: HttpRequest, app: App): Promise<HttpResponseInit> {
  const parsed = listQuery.safeParse(Object.fromEntries(request.query.entries()));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`);
    return problem(400, 'invalid_request', problems.join('; '), { members: { problems } });
  }
  const runs = await app.runs().history.list(parsed.data);
  const last = runs.at(-1);
  const next =
    runs.length === parsed.data.limit && last
      ? `?${new URLSearchParams({ ...(parsed.data.kind ? { kind: parsed.data.kind } : {}), limit: String(parsed.data.limit), before: last.startedAt })}`
      : undefined;
  return { jsonBody: { runs, ...(next ? { next } : {}) } };
}

/** GET /api/manage/runs/{id} */
export async function getRun(id: string | undefined, app: App): Promise<HttpResponseInit> {
  if (!id || id.length > 200) return problem(400, 'invalid_request', 'a run id is 1–200 characters');
  const run = await app.runs().history.get(id);
  return run
    ? { jsonBody: run }
    : problem(404, 'not_found', `no run ${id} in the last ${app.config.runHistoryDays} days`);
}

/**
 * POST /api/manage/sync — starts a sync now (trigger `manual`), or 409 naming the running one. The answer never
 * carries the durable system's URLs or keys: it points at the run history instead.
 */
export async function startSync(client: DurableClient, app: App): Promise<HttpResponseInit> {
  const id = syncInstanceId(app.access().tenant.name);
  const existing = await readInstance(client, id);
  if (existing && isRunning(existing.runtimeStatus)) {
    const status = existing.customStatus as Partial<SyncStatus> | undefined;
    return problem(
      409,
      'sync_running',
      'A sync is already running; it is in the run history. Start another when it has finished.',
      {
        members: {
          running: {
            runId: status?.runId ?? null,
            since: existing.createdTime,
            state: existing.runtimeStatus,
          },
        },
      },
    );
  }
  await client.startNew(SYNC.orchestrator, { instanceId: id, input: { trigger: 'manual' } });
  app.logger.log('info', 'sync run requested', { tenant: app.access().tenant.name, instanceId: id });
  return {
    status: 202,
    headers: { location: 'runs?kind=sync&limit=1', 'retry-after': '5' },
    jsonBody: { status: 'started', runs: 'runs?kind=sync' },
  };
}
