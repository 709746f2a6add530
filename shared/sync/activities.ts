import type { Host } from '../feature';
import { SYNC_PARTS } from './feature';
import { syncDetailsSchema } from './run-details';
import { codeOf } from '../errors';
import { interruptionsAfter, syncSummary } from './summary';
import { endRunSpan } from '../telemetry';
import { noCounts } from '../changes';
import {
  beginInputSchema,
  failInputSchema,
  finishInputSchema,
  sliceInputSchema,
  SYNC_RUN,
  type BeginResult,
  type SyncPlan,
  type RunError,
} from './orchestration';
import {
  beginRun,
  blockedResult,
  finishRun,
  parentsOf,
  streamsOf,
  syncStream,
  type StreamResult,
} from './run-steps';

/**
 * The sync orchestration's activities (functions/sync-*.ts register them under SYNC's names). Each parses its
 * input — activity inputs are stored in the durable history, so they never carry a record, token or secret — and
 * runs in a span of the run's trace (shared/telemetry).
 */

const message = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2_000);

/** The run's summary as the history holds it now; none when it cannot be read (that never fails a run). */
const previousSummary = (app: Host, runId: string) =>
  app
    .runs()
    .history.get(runId)
    .catch(() => undefined);

/** The run to work on — the unfinished one (resumed under its id) or a new one — and its streams; or why not. */
export async function syncBeginActivity(app: Host, input: unknown): Promise<BeginResult> {
  const { full, fullPass, trigger, runId, startedAt } = beginInputSchema.parse(input);
  // The run's trace from the start (its catalog's introspection and token are part of it): the unfinished run's
  // id when there is one, else the new one's.
  let traceId = runId;
  try {
    if (!full)
      traceId =
        (await app.part(SYNC_PARTS).context.state.readRun(app.part(SYNC_PARTS).context.tenant))?.runId ??
        runId;
  } catch {
    // the set-up or the state is what fails: begin reports it below, under the new id
  }
  return app.traced('sync begin', { runId: traceId, trigger }, async (): Promise<BeginResult> => {
    let plan: SyncPlan;
    try {
      const sync = app.part(SYNC_PARTS);
      const run = await beginRun(sync.context, {
        full,
        fullPass,
        runId,
        startedAt,
        catalog: () => sync.catalog(app.access().graphql),
      });
      const streams = streamsOf(run);
      const parents = parentsOf(streams) as Record<string, string>;
      plan = {
        runId: run.runId,
        startedAt: run.startedAt,
        full: run.full,
        ...(run.fullPass ? { fullPass: true } : {}),
        resumed: run.resumed,
        trigger,
        streams: streams.map((s) => s.name),
        ...(Object.keys(parents).length ? { parents } : {}),
        concurrency: sync.concurrency,
      };
      const sinks = sync.context.sink.description;
      app.logger.log('info', plan.resumed ? 'sync run resumed' : 'sync run started', {
        runId: plan.runId,
        tenant: sync.context.tenant,
      });
      // A resumed run keeps why it stopped before (its summary is replaced under the same id).
      const interruptions = plan.resumed
        ? interruptionsAfter(await previousSummary(app, plan.runId))
        : undefined;
      await app.runs().save(
        syncSummary(plan, [], {
          trigger: plan.resumed ? 'resumed' : trigger,
          sinks,
          interruptions,
          schema: run.schema,
        }),
      );
    } catch (err) {
      // Named, not thrown: the orchestrator records the run as failed with this code and its action.
      return { failed: { code: codeOf(err), message: message(err) } };
    }
    return plan;
  });
}

/** One stream's pass from its checkpoint, for up to ACTIVITY_SLICE_SECONDS; the orchestrator calls again if not done. */
export async function syncSliceActivity(app: Host, input: unknown): Promise<StreamResult> {
  const { run, stream } = sliceInputSchema.parse(input);
  return app.traced(
    'sync stream',
    { runId: run.runId, stream },
    async () => {
      const sync = app.part(SYNC_PARTS);
      // The streams the run began with, from its record (the catalog may have moved on since).
      const record = await sync.context.state.readRun(sync.context.tenant);
      const current = record?.runId === run.runId ? record : undefined;
      const blocked = current && blockedResult(current, stream);
      if (blocked) return blocked;
      const definition = current && streamsOf(current).find((s) => s.name === stream);
      if (!current || !definition)
        return {
          stream,
          ok: false,
          done: false,
          counts: noCounts(),
          error: `stream ${stream} is not in run ${run.runId}'s record`,
          errorCode: 'unexpected',
        };
      const started = app.clock.now();
      const result = await syncStream(app.access().graphql, definition, current, sync.context, {
        deadlineMs: started + app.config.activitySliceSeconds * 1000,
      });
      // The heartbeat of a long pass: the no-successful-sync alert in infra/ counts these as well as completed
      // runs, so a multi-hour full pass that goes on doing its slices does not look like a sync that stopped.
      if (result.ok)
        app.logger.log('info', 'sync run progress', {
          runId: run.runId,
          tenant: app.config.tenant?.name,
          stream,
          records: result.counts.read,
        });
      return { ...result, durationMs: Math.max(0, Math.round(app.clock.now() - started)) };
    },
    // A stream that failed returns its result (the run goes on): its span is marked failed all the same.
    (r) => (r.ok ? undefined : (r.errorCode ?? 'sync_failed')),
  );
}

/** Ends the run in the history, the logs the alerts read, and its trace. */
async function endRun(
  app: Host,
  run: { runId: string; startedAt: string },
  results: StreamResult[],
  options: {
    trigger: 'schedule' | 'manual' | 'resumed';
    finishedAt: string;
    sinks: string;
    error?: RunError;
  },
): Promise<{ ok: boolean }> {
  // Not from the sync's set-up: a run that failed because that could not be built must still be recorded.
  const tenant = app.config.tenant?.name;
  const previous = await previousSummary(app, run.runId);
  const summary = syncSummary(run, results, {
    ...options,
    interruptions: previous?.interruptions,
    schema: previous ? syncDetailsSchema.safeParse(previous).data?.schema : undefined,
  });
  const ok = summary.outcome === 'succeeded';
  // The alert rules in infra/ read these records: their message and fields are part of the contract.
  app.logger.log(ok ? 'info' : 'warn', ok ? 'sync run completed' : SYNC_RUN.failedRecord, {
    runId: run.runId,
    tenant,
    count: results.filter((r) => !r.ok).length,
    code: summary.error?.code,
  });
  await app.runs().save(summary);
  const totals = results.reduce((t, r) => ({ records: t.records + r.counts.read }), { records: 0 });
  endRunSpan(
    SYNC_RUN.span,
    run.runId,
    run.startedAt,
    {
      tenant,
      kind: 'sync',
      trigger: options.trigger,
      outcome: summary.outcome,
      count: results.length,
      records: totals.records,
    },
    summary.error?.code,
    Date.parse(options.finishedAt),
  );
  return { ok };
}

/** The manifest to the sinks and the summary to the run history; a complete run clears its checkpoints. */
export async function syncFinishActivity(
  app: Host,
  input: unknown,
): Promise<{ ok: boolean; runId: string; error?: string; failed?: RunError }> {
  const { run, results, trigger } = finishInputSchema.parse(input);
  return app.traced('sync finish', { runId: run.runId }, async () => {
    const { context } = app.part(SYNC_PARTS);
    let manifest;
    try {
      manifest = await finishRun(context, run, results);
    } catch (err) {
      // Named, not thrown: the orchestrator ends the run as failed with this code (`fail`).
      return { ok: false, runId: run.runId, failed: { code: codeOf(err), message: message(err) } };
    }
    await endRun(app, run, results, {
      trigger,
      finishedAt: manifest.finishedAt,
      sinks: context.sink.description,
      ...(manifest.error ? { error: { code: 'sink_failed', message: manifest.error } } : {}),
    });
    return { ok: manifest.ok, runId: manifest.runId, error: manifest.error };
  });
}

/**
 * A run that ended without its manifest (begin, a slice or finish threw, or the orchestration did): failed in the
 * history with its error and action. Its checkpoints stay, so the next run resumes it.
 */
export async function syncFailActivity(app: Host, input: unknown): Promise<void> {
  const { run, results, trigger, error } = failInputSchema.parse(input);
  await app.traced('sync fail', { runId: run.runId }, async () => {
    await endRun(app, run, results, {
      trigger,
      finishedAt: new Date(app.clock.now()).toISOString(),
      sinks: app.config.sinkSpecs.map((s) => s.kind).join(' + '),
      error,
    });
  });
}
