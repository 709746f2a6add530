import type { HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { durableCall, ended, isRunning, readInstance, waitForInstance } from '../durable';
import { IntegrationError, problem, retryAfterOf } from '../errors';
import type { Host } from '../feature';
import { sweepStoppedRuns, type SweepHost } from '../runs/sweep';
import { SYNC, syncInstanceId, type SyncStatus } from './orchestration';

/** What starting a sync needs of its host: the sweep's, the configuration and its traces. */
export type SyncStartHost = SweepHost & Pick<Host, 'config' | 'traced'>;

/**
 * How long a start waits for the last run's orchestration to complete once the run history has recorded that run's
 * end — its last step, which takes milliseconds to a few seconds (a queue's poll) — before ending it.
 */
export const FINISHING_WAIT_MS = 10_000;

/**
 * The tenant's sync instance if a sync is running in it, else undefined. The run history is the truth: an instance
 * whose run the history has ended (`finish` or `fail` recorded it) is only completing — answering "running" then
 * refused a start the run history and the status page showed as possible. Such an instance is waited for, and ended
 * if it does not complete (its run is accounted for: nothing is lost), so the tenant's instance id is free.
 */
async function syncInProgress(
  client: DurableClient,
  app: SyncStartHost,
  id: string,
): Promise<DurableOrchestrationStatus | undefined> {
  const existing = await readInstance(client, id);
  if (!existing || !isRunning(existing.runtimeStatus)) return undefined;
  // The run's id is in the custom status once `begin` has recorded the run; before that it is starting.
  const runId = (existing.customStatus as { runId?: unknown } | null | undefined)?.runId;
  if (typeof runId !== 'string') return existing;
  const recorded = await app.runs().history.get(runId);
  if (!recorded || recorded.outcome === 'running') return existing;
  let last = await waitForInstance(client, id, ended, FINISHING_WAIT_MS);
  if (ended(last)) return undefined;
  app.logger.log('warn', 'sync orchestration ended late', { runId, instanceId: id });
  await durableCall('end the orchestration of an ended run', () =>
    client.terminate(
      id,
      `its run ${runId} had ended in the run history; the orchestration was completing late`,
    ),
  );
  last = await waitForInstance(client, id, ended, FINISHING_WAIT_MS);
  if (ended(last)) return undefined;
  throw new IntegrationError(
    'service_unavailable',
    `the durable store has not ended the orchestration of sync run ${runId}, which the run history shows as ${recorded.outcome}`,
  );
}

/**
 * Starts a sync now (the timer's tick, or POST /api/manage/sync) unless one is running or starting: first the runs
 * whose orchestration stopped without ending them are accounted for (shared/runs/sweep.ts). Safe under any concurrency, on
 * any number of instances: the check and the start happen under the tenant's start lease (shared/sync/blob-state.ts), so
 * of starts that race one starts the run and the others see it running (or starting, without an instance yet). A
 * run that has ended in the run history never blocks a start, whatever its orchestration is still doing.
 */
export async function startSyncRun(
  client: DurableClient,
  app: SyncStartHost,
  trigger: 'schedule' | 'manual',
): Promise<{ started: true } | { started: false; running?: DurableOrchestrationStatus }> {
  const tenant = app.access().tenant.name;
  const id = syncInstanceId(tenant);
  const running = () => syncInProgress(client, app, id);
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
      `A sync is already running; it is in the run history. Start another when it has finished, or after ${retryAfterOf('sync_running')} s.`,
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
