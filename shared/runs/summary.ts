import { z } from 'zod';
import { bounded } from '../errors';
import { errorCodeSchema } from '../errors/code-schema';

/**
 * A run's summary, whatever its kind: what the run history keeps (./history.ts) so an operator can see every
 * unattended run (GET /api/manage/runs, the status page). Never a record, token or secret: counts, times, and an
 * error's code, message and the action that fixes it. Beside the fields every run has, a summary holds its kind's own
 * details (a sync's streams, an import's items), which the kind declares — their schema, how they are bounded and
 * shown (./kind.ts): this file names none, and keeps a kind's fields as they are.
 */
/** A run kind's name as stored (./kind.ts): lower-case words. */
export const runKindName = z.string().regex(/^[a-z][a-z-]{0,39}$/, 'a run kind: lower-case letters and -');

export const runSummarySchema = z.looseObject({
  id: z.string().min(1).max(200),
  kind: runKindName,
  trigger: z.enum(['schedule', 'manual', 'resumed', 'request']),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().optional(),
  outcome: z.enum(['running', 'succeeded', 'failed']),
  durationMs: z.number().int().min(0).optional(),
  error: z.object({ code: errorCodeSchema, message: z.string(), action: z.string().optional() }).optional(),
  /** A resumed run's earlier endings: each failure that stopped it before, newest last (at most five). */
  interruptions: z
    .array(z.object({ at: z.string(), code: errorCodeSchema, message: z.string() }))
    .max(5)
    .optional(),
});
/** A run's summary: the fields every run has, and its kind's details (unknown here: the kind reads them). */
export type RunSummary = z.infer<typeof runSummarySchema>;

/** A run's end and how long it took, as every kind's summary records them. */
export const finishedFields = (startedAt: string, finishedAt: string) => ({
  finishedAt,
  durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
});

/**
 * Table storage keeps at most 32 K characters in one property: a summary is stored as one. Error texts are bounded
 * first (the run's and each interruption's, and what its kind's `bound` bounds of its details); should the summary
 * still be too long, the kind's details are bounded harder, then the interruptions go. Never the outcome, the counts
 * or the run's own error code and action.
 */
export const MAX_SUMMARY_CHARS = 30_000;

export function boundedSummary<S extends RunSummary>(
  summary: S,
  bound: (summary: S, hard: boolean) => S = (x) => x,
): S {
  let s: S = bound(
    {
      ...summary,
      ...(summary.error ? { error: { ...summary.error, message: bounded(summary.error.message) } } : {}),
      ...(summary.interruptions
        ? { interruptions: summary.interruptions.map((i) => ({ ...i, message: bounded(i.message, 500) })) }
        : {}),
    },
    false,
  );
  if (JSON.stringify(s).length > MAX_SUMMARY_CHARS) s = bound(s, true);
  if (JSON.stringify(s).length > MAX_SUMMARY_CHARS) s = { ...s, interruptions: undefined };
  return s;
}

/**
 * The least a run's summary says — what it was, when, and how it ended, with its error's code and action — for when
 * the whole one could not be written: a run that started always ends in the history.
 */
export function minimalSummary(summary: RunSummary): RunSummary {
  return {
    id: summary.id,
    kind: summary.kind,
    trigger: summary.trigger,
    startedAt: summary.startedAt,
    ...(summary.finishedAt ? { finishedAt: summary.finishedAt, durationMs: summary.durationMs } : {}),
    outcome: summary.outcome,
    ...(summary.error
      ? {
          error: {
            code: summary.error.code,
            message: bounded(summary.error.message, 300),
            ...(summary.error.action ? { action: summary.error.action } : {}),
          },
        }
      : {}),
  };
}
