import { z } from 'zod';
import { streamCountsSchema } from '../changes';
import { bounded } from '../errors';
import { errorCodeSchema } from '../error-codes';

/**
 * A run's summary, whatever its kind: what the run history keeps (./history.ts) so an operator can see every
 * unattended run (GET /api/manage/runs, the status page). Never a record, token or secret: counts, times, and an
 * error's code, message and the action that fixes it. The kinds are their features' (./kind.ts); this names none.
 */
/** What a pass found about the tenant's schema (shared/catalog/): fields not synced, changes adopted. */
export const schemaFindingsSchema = z.object({
  added: z.record(z.string(), z.array(z.string())).optional(),
  changes: z
    .array(z.object({ stream: z.string(), added: z.array(z.string()), removed: z.array(z.string()) }))
    .optional(),
  introspection: z.boolean().optional(),
});

/** A stream's page size lowered because the tenant refused its own (shared/graphql/limits.ts), and which limit. */
export const loweredPageSizeSchema = z.object({ size: z.number().int().min(1), limit: z.string().max(200) });
export type LoweredPageSize = z.infer<typeof loweredPageSizeSchema>;

/** The outcome of a run that applies items one by one (a write-back): its operation and each item's end. */
export const itemsSectionSchema = z.object({
  operation: z.string(),
  total: z.number().int(),
  applied: z.number().int(),
  failed: z.number().int(),
  /** Sent, answer lost (absent in summaries written before the state existed). */
  outcome_unknown: z.number().int().optional(),
  skipped: z.number().int(),
  pending: z.number().int(),
  /** The admin whose session applies them. */
  person: z.string().optional(),
  failures: z
    .array(z.object({ key: z.string(), code: errorCodeSchema.optional(), message: z.string() }))
    .max(20),
  waitingForAdmin: z.object({ since: z.string(), reason: z.string() }).optional(),
  waitingForTenant: z.object({ since: z.string(), reason: z.string() }).optional(),
});
export type ItemsSection = z.infer<typeof itemsSectionSchema>;

/** A run kind's name as stored (./kind.ts): lower-case words. */
export const runKindName = z.string().regex(/^[a-z][a-z-]{0,39}$/, 'a run kind: lower-case letters and -');

const summaryShape = z.object({
  id: z.string().min(1).max(200),
  kind: runKindName,
  trigger: z.enum(['schedule', 'manual', 'resumed', 'request']),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().optional(),
  outcome: z.enum(['running', 'succeeded', 'failed']),
  durationMs: z.number().int().min(0).optional(),
  streams: z.record(
    z.string(),
    streamCountsSchema.extend({
      ok: z.boolean(),
      durationMs: z.number().int().min(0).optional(),
      error: z.string().optional(),
      errorCode: errorCodeSchema.optional(),
      /** A stream's pass: every record read, or only those changed since the last one. */
      pass: z.enum(['full', 'incremental']).optional(),
      pageSize: loweredPageSizeSchema.optional(),
      /** Read newest first, and the tenant did not keep the order: the pass read on; the next is a full one. */
      orderNotKept: z.literal(true).optional(),
    }),
  ),
  tokenRequests: z.number().int().min(0).optional(),
  error: z.object({ code: errorCodeSchema, message: z.string(), action: z.string().optional() }).optional(),
  /** A resumed run's earlier endings: each failure that stopped it before, newest last (at most five). */
  interruptions: z
    .array(z.object({ at: z.string(), code: errorCodeSchema, message: z.string() }))
    .max(5)
    .optional(),
  sinks: z.string().optional(),
  /** The run's view of the tenant's schema: fields it has that a stream does not read; changes adopted. */
  schema: schemaFindingsSchema.optional(),
  /** What a run that applies items did with each (its operation, the items' ends, the first failures, a wait). */
  items: itemsSectionSchema.optional(),
});
/**
 * Summaries stored before 2026-11-28 keep a write-back's items under the name of its run kind: read as `items`
 * (the history names no kind since).
 */
const LEGACY_ITEMS = 'import';
export const runSummarySchema = z.preprocess((v) => {
  if (!v || typeof v !== 'object' || !(LEGACY_ITEMS in v) || 'items' in v) return v;
  const { [LEGACY_ITEMS]: items, ...rest } = v as Record<string, unknown>;
  return { ...rest, items };
}, summaryShape);
export type RunSummary = z.infer<typeof summaryShape>;

/** A run's end and how long it took, as every kind's summary records them. */
export const finishedFields = (startedAt: string, finishedAt: string) => ({
  finishedAt,
  durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
});

/**
 * Table storage keeps at most 32 K characters in one property: a summary is stored as one. Error texts are bounded
 * first (the run's, each stream's, each interruption's); should the summary still be too long, the streams' error
 * texts go, then the interruptions. Never the outcome, the counts or the run's own error code and action.
 */
export const MAX_SUMMARY_CHARS = 30_000;

export function boundedSummary(summary: RunSummary): RunSummary {
  let s: RunSummary = {
    ...summary,
    ...(summary.error ? { error: { ...summary.error, message: bounded(summary.error.message) } } : {}),
    streams: Object.fromEntries(
      Object.entries(summary.streams).map(([name, c]) => [
        name,
        c.error ? { ...c, error: bounded(c.error, 500) } : c,
      ]),
    ),
    ...(summary.interruptions
      ? { interruptions: summary.interruptions.map((i) => ({ ...i, message: bounded(i.message, 500) })) }
      : {}),
  };
  if (JSON.stringify(s).length > MAX_SUMMARY_CHARS)
    s = {
      ...s,
      streams: Object.fromEntries(
        Object.entries(s.streams).map(([name, c]) => [name, { ...c, error: undefined }]),
      ),
    };
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
    streams: {},
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
