import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import { streamCountsSchema, type StreamCounts } from './counts';
import type { StreamResult } from './run';

/** Names shared by the timer, the orchestrator and its activities. */
export const SYNC = {
  orchestrator: 'syncRun',
  begin: 'syncBegin',
  stream: 'syncStreamSlice',
  finish: 'syncFinish',
} as const;

/** One sync per tenant at a time: a deterministic instance id. */
export const syncInstanceId = (tenant: string) => `sync-${tenant.toLowerCase()}`;

/** How long one stream activity works before handing back (well inside Consumption's 10-minute limit). */
export const SLICE_SECONDS = 240;

/** What started a run: the timer, or a person (`POST /api/manage/sync`). A resumed run says so in its plan. */
export const triggerSchema = z.enum(['schedule', 'manual']);

export const runInputSchema = z
  .object({ full: z.boolean().default(false), trigger: triggerSchema.default('schedule') })
  .strict();

const runRecord = z.object({ runId: z.string().min(1), startedAt: z.string(), full: z.boolean() });

export const planSchema = runRecord.extend({
  resumed: z.boolean(),
  trigger: triggerSchema,
  streams: z.array(z.string()),
  concurrency: z.number().int().min(1),
});
export type SyncPlan = z.infer<typeof planSchema>;

export const sliceInputSchema = z.object({ run: runRecord, stream: z.string().min(1) }).strict();

const streamResult = z.object({
  stream: z.string(),
  ok: z.boolean(),
  done: z.boolean(),
  counts: streamCountsSchema,
  error: z.string().optional(),
  errorCode: z.string().optional(),
  durationMs: z.number().int().min(0).optional(),
});
export const finishInputSchema = z
  .object({
    run: runRecord,
    results: z.array(streamResult),
    trigger: z.enum(['schedule', 'manual', 'resumed']).default('schedule'),
  })
  .strict();

export type SyncStreamState = 'waiting' | 'running' | 'done' | 'failed';

/** The orchestration's custom status: per-stream state and counts; never a record, token or secret. */
export interface SyncStatus {
  runId: string;
  resumed: boolean;
  state: 'running' | 'completed' | 'failed';
  streams: Record<string, { state: SyncStreamState; counts?: StreamCounts; error?: string }>;
  /** A failure of the run itself (planning, or the manifest), as opposed to a stream's. */
  error?: string;
}

export function syncStatus(
  plan: SyncPlan,
  results: Record<string, StreamResult>,
  running: string[],
  state: SyncStatus['state'] = 'running',
  error?: string,
): SyncStatus {
  return {
    runId: plan.runId,
    resumed: plan.resumed,
    state,
    ...(error ? { error } : {}),
    streams: Object.fromEntries(
      plan.streams.map((s) => {
        const r = results[s];
        const st: SyncStreamState =
          r && !r.ok ? 'failed' : r?.done ? 'done' : running.includes(s) ? 'running' : 'waiting';
        return [
          s,
          { state: st, ...(r ? { counts: r.counts } : {}), ...(r?.error ? { error: r.error } : {}) },
        ];
      }),
    ),
  };
}

/**
 * One sync run: plan (or resume) it, then slices of each stream — at most `concurrency` streams at once —
 * until every stream is done or failed, then the manifest. Deterministic: all I/O is in activities; an
 * activity that throws ends the run as failed with its message, and the next tick resumes from the checkpoints.
 */
export function* syncOrchestrator(
  context: OrchestrationContext,
): Generator<Task, SyncStatus | { state: 'failed'; error: string }, unknown> {
  let plan: SyncPlan;
  try {
    plan = (yield context.df.callActivity(SYNC.begin, context.df.getInput() ?? {})) as SyncPlan;
  } catch (err) {
    const failed = { state: 'failed' as const, error: `the run could not start: ${(err as Error).message}` };
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
