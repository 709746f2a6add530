import type { DurableClient } from 'durable-functions';
import { isRunning, readInstance } from '../durable';
import { errorText } from '../errors';
import type { Clock } from '../clock';
import type { Logger } from '../log';
import type { RunRecorder } from './recorder';
import { endRunSpan } from '../telemetry';
import type { RunKinds } from './kind';
import type { RunSummary } from './summary';

/** What the sweep needs of its host (shared/host.ts's, and the kinds of run the app has). */
export interface SweepHost {
  clock: Clock;
  logger: Logger;
  access(): { tenant: { name: string } };
  runs(): RunRecorder;
  runKinds: RunKinds;
}

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
 * their instance may not have reported yet. Called before each scheduled run starts; never fails the caller.
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
      const where = app.runKinds[run.kind];
      // A kind this app no longer runs: nothing works on it any more.
      const instance = where && (await readInstance(client, where.instanceId(run, tenant)));
      if (where && stillWorking(run, instance, where.perRun)) continue;
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
          action: errorText('run_stopped').action,
        },
      });
      if (where) app.logger.log('warn', where.failedRecord, { runId: run.id, tenant, code: 'run_stopped' });
      endRunSpan(
        where?.span ?? `${run.kind} run`,
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
