import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import { streamCountsSchema, type StreamCounts } from '../changes';
import type { StreamResult } from './run-steps';
import { errorCodeSchema } from '../errors/code-schema';
import { loweredPageSizeSchema } from './run-details';
import { partOf } from '../config';
import type { RunKind } from '../runs/kind';
import { SYNC_SETTINGS } from './settings';
import { neverReady, readiness } from './order';

/** Names shared by the timer, the orchestrator and its activities. */
export const SYNC = {
  orchestrator: 'syncRun',
  begin: 'syncBegin',
  slice: 'syncStreamSlice',
  finish: 'syncFinish',
  fail: 'syncFail',
} as const;

/** One sync per tenant at a time: a deterministic instance id. */
export const syncInstanceId = (tenant: string) => `sync-${tenant.toLowerCase()}`;

/** The sync's kind of run: the tenant's one sync instance, reused by its runs in turn. */
export const SYNC_RUN: RunKind = {
  kind: 'sync',
  span: 'sync run',
  failedRecord: 'sync run failed',
  instanceId: (_run, tenant) => syncInstanceId(tenant),
  perRun: false,
  schedule: (config) => partOf(config, SYNC_SETTINGS).schedule,
};

/** What started a run: the timer, or a person (`POST /api/manage/sync`). A resumed run says so in its plan. */
export const triggerSchema = z.enum(['schedule', 'manual']);

export const runInputSchema = z
  .object({
    full: z.boolean().default(false),
    /** Every stream reads everything this run, on its state (incremental ones included). */
    fullPass: z.boolean().default(false),
    trigger: triggerSchema.default('schedule'),
  })
  .strict();

/** What the orchestrator hands `begin`: its input, and the id and start a new run gets (a resumed one keeps its own). */
export const beginInputSchema = runInputSchema
  .extend({ runId: z.string().min(1).max(100), startedAt: z.iso.datetime() })
  .strict();

const runRecord = z.object({
  runId: z.string().min(1),
  startedAt: z.string(),
  full: z.boolean(),
  fullPass: z.boolean().optional(),
});

/** Why a run failed as a whole, as an activity reports it (it never throws what it can name). */
const runError = z.object({ code: errorCodeSchema, message: z.string() });
export type RunError = z.infer<typeof runError>;

export const planSchema = runRecord.extend({
  resumed: z.boolean(),
  trigger: triggerSchema,
  streams: z.array(z.string()),
  concurrency: z.number().int().min(1),
  /** Each child stream's parent: a child is read once its parent is done (shared/sync/order.ts). */
  parents: z.record(z.string(), z.string()).optional(),
});
export type SyncPlan = z.infer<typeof planSchema>;

/** `begin`'s answer: the plan, or why the run could not start. */
export type BeginResult = SyncPlan | { failed: RunError };

export const sliceInputSchema = z.object({ run: runRecord, stream: z.string().min(1) }).strict();

const streamResult = z.object({
  stream: z.string(),
  ok: z.boolean(),
  done: z.boolean(),
  counts: streamCountsSchema,
  error: z.string().optional(),
  errorCode: errorCodeSchema.optional(),
  durationMs: z.number().int().min(0).optional(),
  pass: z.enum(['full', 'incremental']).optional(),
  pageSize: loweredPageSizeSchema.optional(),
  orderNotKept: z.literal(true).optional(),
});
export const finishInputSchema = z
  .object({
    run: runRecord,
    results: z.array(streamResult),
    trigger: z.enum(['schedule', 'manual', 'resumed']).default('schedule'),
  })
  .strict();

/** `fail`: a run that ended without its manifest — begin, a slice or finish threw, or the orchestration itself did. */
export const failInputSchema = finishInputSchema.extend({ error: runError }).strict();

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

/** A new run's id: when it started, and a deterministic suffix (the same on every replay). */
const newRunId = (startedAt: string, guid: string) =>
  `${startedAt.replace(/[:.]/g, '-')}-${guid.slice(0, 8)}`;

const failure = (err: unknown): RunError => ({
  code: 'unexpected',
  // An activity's exception arrives with the host's details appended after a line break: its message is the first part.
  message: (err instanceof Error ? err.message : String(err)).trim().slice(0, 2_000),
});

/**
 * One sync run: plan (or resume) it, then slices of each stream — at most `concurrency` streams at once —
 * until every stream is done or failed, then the manifest. Deterministic: all I/O is in activities, time is the
 * context's. Whatever fails — begin, a slice, finish, or this code — the run still ends in the run history as
 * failed, with its error and the action that fixes it (`fail`); the next tick resumes it from its checkpoints.
 */
export function* syncOrchestrator(
  context: OrchestrationContext,
): Generator<Task, SyncStatus | { state: 'failed'; runId: string; error: string }, unknown> {
  const startedAt = context.df.currentUtcDateTime.toISOString();
  let run: z.infer<typeof runRecord> = {
    runId: newRunId(startedAt, context.df.newGuid(`${context.df.instanceId}@${startedAt}`)),
    startedAt,
    full: false,
  };
  let plan: SyncPlan | undefined;
  let trigger: 'schedule' | 'manual' | 'resumed' = 'schedule';
  const results: Record<string, StreamResult> = {};
  try {
    const input = runInputSchema.parse(context.df.getInput() ?? {});
    trigger = input.trigger;
    run = { ...run, full: input.full };
    const begun = (yield context.df.callActivity(SYNC.begin, {
      ...input,
      runId: run.runId,
      startedAt,
    })) as BeginResult;
    if ('failed' in begun) throw new RunFailed(begun.failed);
    plan = begun;
    run = {
      runId: plan.runId,
      startedAt: plan.startedAt,
      full: plan.full,
      ...(plan.fullPass ? { fullPass: true } : {}),
    };
    if (plan.resumed) trigger = 'resumed';
    let pending = [...plan.streams];
    const inRun = new Set(plan.streams);
    while (pending.length) {
      // A child whose parent did not complete fails at once; one whose parent is still going waits.
      const ready: string[] = [];
      for (const s of pending) {
        const r = readiness(s, plan.parents ?? {}, results, inRun);
        if (r === 'ready') ready.push(s);
        else if (r !== 'wait') results[s] = r;
      }
      pending = pending.filter((s) => !results[s] || (results[s].ok && !results[s].done));
      if (!ready.length) {
        for (const s of pending) results[s] = neverReady(s);
        break;
      }
      const wave = ready.slice(0, plan.concurrency);
      context.df.setCustomStatus(syncStatus(plan, results, wave));
      const out = (yield context.df.Task.all(
        wave.map((stream) => context.df.callActivity(SYNC.slice, { run, stream })),
      )) as StreamResult[];
      // A stream's time is the sum of its slices'.
      for (const r of out)
        results[r.stream] = { ...r, durationMs: (results[r.stream]?.durationMs ?? 0) + (r.durationMs ?? 0) };
      pending = pending.filter((s) => !results[s] || (results[s].ok && !results[s].done));
    }
    const manifest = (yield context.df.callActivity(SYNC.finish, {
      run,
      results: plan.streams.map((s) => results[s]),
      trigger,
    })) as { ok: boolean; error?: string; failed?: RunError };
    if (manifest.failed) throw new RunFailed(manifest.failed);
    const final = syncStatus(plan, results, [], manifest.ok ? 'completed' : 'failed', manifest.error);
    context.df.setCustomStatus(final);
    return final;
  } catch (err) {
    const error = err instanceof RunFailed ? err.error : failure(err);
    try {
      yield context.df.callActivity(SYNC.fail, {
        run,
        results: Object.values(results),
        trigger,
        error,
      });
    } catch {
      // The history could not be written either: the next tick's sweep (shared/runs/sweep.ts) accounts for it.
    }
    let final: SyncStatus | { state: 'failed'; runId: string; error: string } | undefined;
    try {
      final = plan && syncStatus(plan, results, [], 'failed', error.message);
    } catch {
      // A plan this code could not read is why it failed: the plain failure says so.
    }
    final ??= { state: 'failed' as const, runId: run.runId, error: error.message };
    context.df.setCustomStatus(final);
    return final;
  }
}

/** A failure an activity named (with its code), carried to the orchestrator's one failure path. */
class RunFailed extends Error {
  constructor(readonly error: RunError) {
    super(error.message);
  }
}
