import type { HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { durableCall, isRunning, readInstance } from '../durable';
import { problem } from '../errors';
import type { Host } from '../host';
import { sweepStoppedRuns, type SweepHost } from '../runs/sweep';
import { SYNC, syncInstanceId, type SyncStatus } from './orchestration';

/** What starting a sync needs of its host: the sweep's, the configuration and its traces. */
export type SyncStartHost = SweepHost & Pick<Host, 'config' | 'traced'>;

/**
 * Starts a sync now (the timer's tick, or POST /api/manage/sync) unless one is running or starting: first the runs
 * whose orchestration stopped without ending them are accounted for (shared/runs/sweep.ts). Safe under any concurrency, on
 * any number of instances: the check and the start happen under the tenant's start lease (shared/sync/state.ts), so
 * of starts that race one starts the run and the others see it running (or starting, without an instance yet).
 */
export async function startSyncRun(
  client: DurableClient,
  app: SyncStartHost,
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
  const { syncStateStore } = await import('./state-store');
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
export async function startSync(client: DurableClient, app: SyncStartHost): Promise<HttpResponseInit> {
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
