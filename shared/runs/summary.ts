import { extensionOf } from '../exports/formats';
import type { ExportInput, StreamOutcome } from '../exports/orchestration';
import { noCounts } from '../changes';
import type { StreamResult } from '../sync/run';
import type { Counts } from '../imports/apply';
import type { ImportInput } from '../imports/orchestration';
import type { RunSummary } from './history';
import { actionFor, type ErrorCode } from '../errors';

const finished = (startedAt: string, finishedAt: string) => ({
  finishedAt,
  durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
});

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
    schema?: RunSummary['schema'];
  },
): RunSummary {
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
    ...(options.finishedAt ? finished(run.startedAt, options.finishedAt) : {}),
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

/**
 * An export's summary from its streams' outcomes: records per stream, and the first failure's fix. Without
 * `finishedAt` it is the summary of an export just accepted (running); with `error`, one that could not finish.
 */
export function exportSummary(
  input: ExportInput,
  outcomes: StreamOutcome[],
  finishedAt?: string,
  error?: string,
): RunSummary {
  const failed = outcomes.find((o) => !o.ok);
  const ok = outcomes.length === input.streams.length && !failed && !error;
  const message = error ?? (failed && !failed.ok ? `${failed.stream}: ${failed.error}` : undefined);
  return {
    id: input.id,
    kind: 'export',
    trigger: 'request',
    startedAt: input.requestedAt,
    ...(finishedAt ? finished(input.requestedAt, finishedAt) : {}),
    outcome: !finishedAt ? 'running' : ok ? 'succeeded' : 'failed',
    streams: Object.fromEntries(
      outcomes.map((o) =>
        o.ok
          ? [o.file.stream, { ...noCounts(), read: o.file.records, ok: true }]
          : [o.stream, { ...noCounts(), ok: false, error: o.error }],
      ),
    ),
    ...(finishedAt && message
      ? { error: { code: 'export_failed', message, action: actionFor('export_failed') } }
      : {}),
    sinks: `${extensionOf(input.format, input.gzip)} to Blob Storage`,
  };
}

/**
 * An import's summary: its items' outcomes and the first failures by the caller's key. Succeeded only when every
 * item was applied; a refused item fails the run (its alert fires) though the import itself completed.
 */
export function importSummary(
  input: ImportInput,
  counts: Counts,
  options: {
    finishedAt?: string;
    failures?: Array<{ key: string; code?: ErrorCode; message: string }>;
    error?: { code: ErrorCode; message: string };
    waitingForAdmin?: { since: string; reason: string };
    waitingForTenant?: { since: string; reason: string };
  } = {},
): RunSummary {
  const failures = options.failures ?? [];
  const unknown = counts.outcome_unknown ?? 0;
  const said = [
    counts.failed ? `${counts.failed} of ${input.total} items failed` : '',
    unknown ? `${unknown} of unknown outcome (sent, answer lost: check them at the tenant)` : '',
    counts.skipped ? `${counts.skipped} skipped` : '',
  ].filter(Boolean);
  const error =
    options.error ??
    (options.finishedAt && said.length
      ? {
          // An unknown outcome first: it is the one that needs someone to look at the tenant.
          code: unknown ? 'outcome_unknown' : 'import_item_refused',
          message: `${said.join(', ')}${failures[0] ? `; first: ${failures[0].key}: ${failures[0].message}` : ''}`,
        }
      : undefined);
  return {
    id: input.id,
    kind: 'import',
    trigger: 'request',
    startedAt: input.requestedAt,
    ...(options.finishedAt ? finished(input.requestedAt, options.finishedAt) : {}),
    outcome: !options.finishedAt ? 'running' : error ? 'failed' : 'succeeded',
    streams: {},
    ...(error ? { error: { ...error, action: actionFor(error.code) } } : {}),
    import: {
      operation: input.operation,
      total: input.total,
      ...counts,
      ...(input.person ? { person: input.person } : {}),
      failures: failures.slice(0, 20),
      ...(options.waitingForAdmin ? { waitingForAdmin: options.waitingForAdmin } : {}),
      ...(options.waitingForTenant ? { waitingForTenant: options.waitingForTenant } : {}),
    },
  };
}
