import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import type { StreamResult } from '../shared/sync/run';
import { SYNC, syncStatus, type SyncPlan } from '../shared/sync/orchestration';

/**
 * One sync run: plan (or resume) it, then slices of each stream — at most `concurrency` streams at once —
 * until every stream is done or failed, then the manifest. Deterministic: all I/O is in activities; an
 * activity that throws ends the run as failed with its message, and the next tick resumes from the checkpoints.
 */
export function* syncOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  let plan: SyncPlan;
  try {
    plan = (yield context.df.callActivity(SYNC.begin, context.df.getInput() ?? {})) as SyncPlan;
  } catch (err) {
    const failed = { state: 'failed', error: `the run could not start: ${(err as Error).message}` };
    context.df.setCustomStatus(failed);
    return failed;
  }
  const run = { runId: plan.runId, startedAt: plan.startedAt, full: plan.full };
  const results: Record<string, StreamResult> = {};
  let pending = [...plan.streams];
  try {
    while (pending.length) {
      const wave = pending.slice(0, plan.concurrency);
      context.df.setCustomStatus(syncStatus(plan, results, wave));
      const out = (yield context.df.Task.all(
        wave.map((stream) => context.df.callActivity(SYNC.stream, { run, stream })),
      )) as StreamResult[];
      // A stream's time is the sum of its slices'.
      for (const r of out)
        results[r.stream] = { ...r, durationMs: (results[r.stream]?.durationMs ?? 0) + (r.durationMs ?? 0) };
      pending = pending.filter((s) => !results[s] || (results[s].ok && !results[s].done));
    }
    const manifest = (yield context.df.callActivity(SYNC.finish, {
      run,
      results: plan.streams.map((s) => results[s]),
      trigger: plan.resumed ? 'resumed' : plan.trigger,
    })) as { ok: boolean; error?: string };
    const final = syncStatus(plan, results, [], manifest.ok ? 'completed' : 'failed', manifest.error);
    context.df.setCustomStatus(final);
    return final;
  } catch (err) {
    const final = syncStatus(plan, results, [], 'failed', (err as Error).message);
    context.df.setCustomStatus(final);
    return final;
  }
}

df.app.orchestration(SYNC.orchestrator, syncOrchestrator);
