import { actionFor, type ErrorCode } from '../errors';
import { finishedFields, type RunSummary } from '../runs/summary';
import type { Counts } from './apply';
import type { ImportInput } from './orchestration';

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
    ...(options.finishedAt ? finishedFields(input.requestedAt, options.finishedAt) : {}),
    outcome: !options.finishedAt ? 'running' : error ? 'failed' : 'succeeded',
    ...(error ? { error: { ...error, action: actionFor(error.code) } } : {}),
    items: {
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
