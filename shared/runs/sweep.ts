import type { DurableClient } from 'durable-functions';
import { isRunning, readInstance } from '../durable';
import { ERRORS } from '../errors';
import type { Clock } from '../clock';
import type { Logger } from '../log';
import type { RunRecorder } from './recorder';
import { endRunSpan, RUN_SPAN } from '../telemetry';
import type { RunKind, RunSummary } from './history';

/**
 * Where a kind of run works: its orchestration instance's id, and whether that instance is the run's own (an export,
 * an import) or the tenant's, reused by its runs in turn (the sync, the device login). Each feature knows its own;
 * the composition root (shared/app.ts) gathers them, so the history knows no feature.
 */
export interface RunInstance {
  instanceId(run: RunSummary, tenant: string): string;
  perRun: boolean;
}
export type RunInstances = Record<RunKind, RunInstance>;

/** What the sweep needs of its host (shared/host.ts's, and where each kind of run works). */
export interface SweepHost {
  clock: Clock;
  logger: Logger;
  access(): { tenant: { name: string } };
  runs(): RunRecorder;
  runInstances: RunInstances;
}

/** The log record each kind's failure carries: what the alert rules in infra/ count (shared/log/alerts.ts). */
const FAILED_RECORD: Record<RunSummary['kind'], string> = {
  sync: 'sync run failed',
  export: 'export failed',
  login: 'device login failed',
  import: 'import failed',
};

/** Whether the instance working on `run` is still working on it (a tenant's instance may be on a later run). */
function stillWorking(
  run: RunSummary,
  instance: Awaited<ReturnType<typeof readInstance>>,
  perRun: boolean,
): boolean {
  if (!instance || !isRunning(instance.runtimeStatus)) return false;
  if (perRun) return true;
  return (instance.customStatus as { runId?: unknown } | null | undefined)?.runId === run.id;
}

/**
 * Accounts for runs that started but whose orchestration stopped without ending them — terminated, or stopped
 * where even its own failure path could not write: each becomes failed in the run history (`run_stopped`), its
 * failure record is logged (so its alert fires) and its trace ends. Runs younger than `graceMs` are left alone:
 * their instance may not have reported yet. Called before each sync starts; never fails the caller.
 */
export async function sweepStoppedRuns(
  client: DurableClient,
  app: SweepHost,
  options: { graceMs?: number } = {},
): Promise<number> {
  const now = app.clock.now();
  const tenant = app.access().tenant.name;
  let swept = 0;
  try {
    const open = (await app.runs().history.list({ limit: 100 })).filter(
      (r) => r.outcome === 'running' && now - Date.parse(r.startedAt) > (options.graceMs ?? 60_000),
    );
    for (const run of open) {
      const where = app.runInstances[run.kind];
      const instance = await readInstance(client, where.instanceId(run, tenant));
      if (stillWorking(run, instance, where.perRun)) continue;
      const finishedAt = new Date(now).toISOString();
      const how = instance
        ? `was ${instance.runtimeStatus.toLowerCase()}${typeof instance.output === 'string' && instance.output ? ` (${instance.output.slice(0, 200)})` : ''}`
        : 'no longer exists';
      await app.runs().save({
        ...run,
        outcome: 'failed',
        finishedAt,
        durationMs: Math.max(0, now - Date.parse(run.startedAt)),
        error: {
          code: 'run_stopped',
          message: `the orchestration ${how} before the run ended`,
          action: ERRORS.run_stopped.action,
        },
      });
      app.logger.log('warn', FAILED_RECORD[run.kind], { runId: run.id, tenant, code: 'run_stopped' });
      endRunSpan(
        RUN_SPAN[run.kind],
        run.id,
        run.startedAt,
        { tenant, kind: run.kind, outcome: 'failed' },
        'run_stopped',
        now,
      );
      swept++;
    }
  } catch (err) {
    app.logger.log('warn', 'run history sweep failed', { reason: (err as Error).message.split('\n')[0] });
  }
  return swept;
}
