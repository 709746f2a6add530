import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import type { StreamResult } from '../shared/sync/run';
import { SYNC, syncStatus, type SyncPlan } from '../shared/sync/orchestration';

/**
 * One sync run: plan (or resume) it, then slices of each stream — at most `concurrency` streams at once —
 * until every stream is done or failed, then the manifest. Deterministic: all I/O is in activities.
 */
export function* syncOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const plan = (yield context.df.callActivity(SYNC.begin, context.df.getInput() ?? {})) as SyncPlan;
  const results: Record<string, StreamResult> = {};
  let pending = [...plan.streams];
  while (pending.length) {
    const wave = pending.slice(0, plan.concurrency);
    context.df.setCustomStatus(syncStatus(plan, results, wave));
    const run = { runId: plan.runId, startedAt: plan.startedAt, full: plan.full };
    const out = (yield context.df.Task.all(
      wave.map((stream) => context.df.callActivity(SYNC.stream, { run, stream })),
    )) as StreamResult[];
    for (const r of out) results[r.stream] = r;
    pending = pending.filter((s) => !results[s] || (results[s].ok && !results[s].done));
  }
  const ordered = plan.streams.map((s) => results[s]);
  const manifest = (yield context.df.callActivity(SYNC.finish, {
    run: { runId: plan.runId, startedAt: plan.startedAt, full: plan.full },
    results: ordered,
  })) as { ok: boolean };
  const final = syncStatus(plan, results, [], manifest.ok ? 'completed' : 'failed');
  context.df.setCustomStatus(final);
  return final;
}

df.app.orchestration(SYNC.orchestrator, syncOrchestrator);
