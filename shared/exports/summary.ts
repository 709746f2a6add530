import { noCounts } from '../changes';
import { actionFor } from '../errors';
import { finishedFields, type RunSummary } from '../runs/summary';
import { extensionOf } from './file';
import type { ExportInput, StreamOutcome } from './orchestration';

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
    ...(finishedAt ? finishedFields(input.requestedAt, finishedAt) : {}),
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
