import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { z } from 'zod';
import type { App } from '../app';
import { isRunning, readInstance, durableCall } from '../durable';
import { problem } from '../errors';
import { SYNC, syncInstanceId, type SyncStatus } from '../sync/orchestration';
import { sweepStoppedRuns } from './sweep';

const listQuery = z
  .object({
    kind: z.enum(['sync', 'export', 'login', 'import']).optional(),
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
 * Starts a sync now (the timer's tick, or POST /api/manage/sync) unless one is running or starting: first the runs
 * whose orchestration stopped without ending them are accounted for (./sweep.ts). Safe under any concurrency, on
 * any number of instances: the check and the start happen under the tenant's start lease (shared/sync/state.ts), so
 * of starts that race one starts the run and the others see it running (or starting, without an instance yet).
 */
export async function startSyncRun(
  client: DurableClient,
  app: App,
  trigger: 'schedule' | 'manual',
): Promise<{ started: true } | { started: false; running?: DurableOrchestrationStatus }> {
  const tenant = app.access().tenant.name;
  const id = syncInstanceId(tenant);
  const running = async () => {
    const existing = await readInstance(client, id);
    return existing && isRunning(existing.runtimeStatus) ? existing : undefined;
  };
  const before = await running();
  if (before) return { started: false, running: before };
  // Loaded here: the storage SDK is not every function's to pay for at start-up.
  const { syncStateStore } = await import('../sync/state-store');
  const outcome = await syncStateStore(app.config).exclusively(tenant, async () => {
    const now = await running();
    if (now) return { started: false as const, running: now };
    await app.traced('sync sweep', {}, () => sweepStoppedRuns(client, app));
    try {
      await durableCall('start the sync', () =>
        client.startNew(SYNC.orchestrator, { instanceId: id, input: { trigger } }),
      );
    } catch (err) {
      // A start that outlived its lease met another one: that one is the run.
      const winner = await running();
      if (winner) return { started: false as const, running: winner };
      throw err;
    }
    app.logger.log('info', 'sync run requested', { tenant, instanceId: id, trigger });
    return { started: true as const };
  });
  return outcome.ran ? outcome.value : { started: false };
}

/**
 * POST /api/manage/sync — starts a sync now (trigger `manual`), or 409 naming the running one. The answer never
 * carries the durable system's URLs or keys: it points at the run history instead.
 */
export async function startSync(client: DurableClient, app: App): Promise<HttpResponseInit> {
  const outcome = await startSyncRun(client, app, 'manual');
  if (!outcome.started) {
    const { running } = outcome;
    const status = running?.customStatus as Partial<SyncStatus> | undefined;
    return problem(
      409,
      'sync_running',
      'A sync is already running; it is in the run history. Start another when it has finished.',
      {
        members: {
          running: {
            runId: status?.runId ?? null,
            since: running?.createdTime ?? null,
            // Another start holds the lease and has not created the instance yet.
            state: running?.runtimeStatus ?? 'Starting',
          },
        },
      },
    );
  }
  return {
    status: 202,
    headers: { location: 'runs?kind=sync&limit=1', 'retry-after': '5' },
    jsonBody: { status: 'started', runs: 'runs?kind=sync' },
  };
}
