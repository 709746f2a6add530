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

export type StreamState = 'waiting' | 'running' | 'done' | 'failed';

/** The orchestration's custom status: per-stream state and counts; never a record, token or secret. */
export interface SyncStatus {
  runId: string;
  resumed: boolean;
  state: 'running' | 'completed' | 'failed';
  streams: Record<string, { state: StreamState; counts?: StreamCounts; error?: string }>;
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
        const st: StreamState =
          r && !r.ok ? 'failed' : r?.done ? 'done' : running.includes(s) ? 'running' : 'waiting';
        return [
          s,
          { state: st, ...(r ? { counts: r.counts } : {}), ...(r?.error ? { error: r.error } : {}) },
        ];
      }),
    ),
  };
}
