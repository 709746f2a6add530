import type { App } from '../app';
import { syncSummary } from '../runs/summary';
import { noCounts } from './counts';
import {
  finishInputSchema,
  runInputSchema,
  SLICE_SECONDS,
  sliceInputSchema,
  type SyncPlan,
} from './orchestration';
import { beginRun, finishRun, syncStream, type StreamResult } from './run';

/**
 * The sync orchestration's activities (functions/sync-*.ts register them under SYNC's names). Each parses its
 * input — activity inputs are stored in the durable history, so they never carry a record, token or secret.
 */

/** The run to work on — the unfinished one (resumed under its id) or a new one — and its streams. */
export async function syncBeginActivity(app: App, input: unknown): Promise<SyncPlan> {
  const { full, trigger } = runInputSchema.parse(input);
  const sync = app.sync();
  const run = await beginRun(sync.context, { full });
  app.logger.log('info', run.resumed ? 'sync run resumed' : 'sync run started', {
    runId: run.runId,
    tenant: sync.context.tenant,
  });
  await app.runs().save(
    syncSummary(run, [], {
      trigger: run.resumed ? 'resumed' : trigger,
      sinks: sync.context.sink.description,
    }),
  );
  return { ...run, trigger, streams: sync.streams.map((s) => s.name), concurrency: sync.concurrency };
}

/** One stream's pass from its checkpoint, for up to SLICE_SECONDS; the orchestrator calls again if not done. */
export async function syncSliceActivity(app: App, input: unknown): Promise<StreamResult> {
  const { run, stream } = sliceInputSchema.parse(input);
  const sync = app.sync();
  const definition = sync.streams.find((s) => s.name === stream);
  if (!definition)
    return {
      stream,
      ok: false,
      done: false,
      counts: noCounts(),
      error: `stream ${stream} is no longer configured`,
      errorCode: 'config_invalid',
    };
  const started = app.clock.now();
  const result = await syncStream(app.access().graphql, definition, run, sync.context, {
    deadlineMs: started + SLICE_SECONDS * 1000,
  });
  return { ...result, durationMs: Math.max(0, Math.round(app.clock.now() - started)) };
}

/** The manifest to the sinks and the summary to the run history; a complete run clears its checkpoints. */
export async function syncFinishActivity(app: App, input: unknown) {
  const { run, results, trigger } = finishInputSchema.parse(input);
  const { context } = app.sync();
  const manifest = await finishRun(context, run, results);
  const summary = syncSummary(run, results, {
    trigger,
    finishedAt: manifest.finishedAt,
    sinks: context.sink.description,
    ...(manifest.error ? { error: { code: 'sink_failed', message: manifest.error } } : {}),
  });
  // The alert rules in infra/ read these records: their message and fields are part of the contract.
  app.logger.log(manifest.ok ? 'info' : 'warn', manifest.ok ? 'sync run completed' : 'sync run failed', {
    runId: run.runId,
    tenant: context.tenant,
    count: results.filter((r) => !r.ok).length,
    code: summary.error?.code,
  });
  await app.runs().save(summary);
  return { ok: manifest.ok, runId: manifest.runId, error: manifest.error };
}
