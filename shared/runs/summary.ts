import type { StreamResult } from '../sync/run';
import type { RunSummary } from './history';
import { actionFor } from './recorder';

/** A sync run's summary from its streams' results: counts, per-stream time, and the first failure's fix. */
export function syncSummary(
  run: { runId: string; startedAt: string },
  results: StreamResult[],
  options: {
    trigger: RunSummary['trigger'];
    finishedAt?: string;
    sinks?: string;
    error?: { code: string; message: string };
  },
): RunSummary {
  const failed = results.find((r) => !r.ok);
  const error =
    options.error ??
    (failed
      ? { code: failed.errorCode ?? 'SYNC_FAILED', message: `${failed.stream}: ${failed.error ?? 'failed'}` }
      : undefined);
  return {
    id: run.runId,
    kind: 'sync',
    trigger: options.trigger,
    startedAt: run.startedAt,
    ...(options.finishedAt
      ? {
          finishedAt: options.finishedAt,
          durationMs: Math.max(0, Date.parse(options.finishedAt) - Date.parse(run.startedAt)),
        }
      : {}),
    outcome: !options.finishedAt ? 'running' : error ? 'failed' : 'succeeded',
    streams: Object.fromEntries(
      results.map((r) => [
        r.stream,
        {
          ...r.counts,
          ok: r.ok,
          ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
          ...(r.error ? { error: r.error, errorCode: r.errorCode } : {}),
        },
      ]),
    ),
    ...(error ? { error: { ...error, action: actionFor(error.code) } } : {}),
    ...(options.sinks ? { sinks: options.sinks } : {}),
  };
}
