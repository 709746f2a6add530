import { actionFor, type ErrorCode } from '../errors';
import { finishedFields, type RunSummary } from '../runs/summary';
import type { SyncDetails, SyncRunSummary } from './run-details';
import type { StreamResult } from './run-steps';

/** A sync run's summary from its streams' results: counts, per-stream time, and the first failure's fix. */
export function syncSummary(
  run: { runId: string; startedAt: string },
  results: StreamResult[],
  options: {
    trigger: RunSummary['trigger'];
    finishedAt?: string;
    sinks?: string;
    error?: { code: ErrorCode; message: string };
    interruptions?: RunSummary['interruptions'];
    schema?: SyncDetails['schema'];
  },
): SyncRunSummary {
  const failed = results.find((r) => !r.ok);
  const error =
    options.error ??
    (failed
      ? { code: failed.errorCode ?? 'sync_failed', message: `${failed.stream}: ${failed.error ?? 'failed'}` }
      : undefined);
  return {
    id: run.runId,
    kind: 'sync',
    trigger: options.trigger,
    startedAt: run.startedAt,
    ...(options.finishedAt ? finishedFields(run.startedAt, options.finishedAt) : {}),
    outcome: !options.finishedAt ? 'running' : error ? 'failed' : 'succeeded',
    streams: Object.fromEntries(
      results.map((r) => [
        r.stream,
        {
          ...r.counts,
          ok: r.ok,
          ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
          ...(r.error ? { error: r.error, errorCode: r.errorCode } : {}),
          ...(r.pass ? { pass: r.pass } : {}),
          ...(r.pageSize ? { pageSize: r.pageSize } : {}),
          ...(r.orderNotKept ? { orderNotKept: true as const } : {}),
        },
      ]),
    ),
    ...(error ? { error: { ...error, action: actionFor(error.code) } } : {}),
    ...(options.sinks ? { sinks: options.sinks } : {}),
    ...(options.interruptions?.length ? { interruptions: options.interruptions } : {}),
    ...(options.schema &&
    (options.schema.added || options.schema.changes || options.schema.introspection === false)
      ? { schema: options.schema }
      : {}),
  };
}

/**
 * What a resumed run carries from its earlier endings: the failure that stopped it last time is added to those
 * before (newest last, the last five, messages short) — so resuming never erases why it stopped.
 */
export function interruptionsAfter(previous: RunSummary | undefined): RunSummary['interruptions'] {
  const earlier = previous?.interruptions ?? [];
  if (!previous || previous.outcome !== 'failed' || !previous.error)
    return earlier.length ? earlier : undefined;
  return [
    ...earlier,
    {
      at: previous.finishedAt ?? previous.startedAt,
      code: previous.error.code,
      message: previous.error.message.slice(0, 500),
    },
  ].slice(-5);
}
