import type { z } from 'zod';
import type { AppConfig } from '../config';
import type { StatusPart } from './page';
import { boundedSummary, runSummarySchema, type RunSummary } from './summary';

/**
 * A kind of run, as the feature that runs it declares it (beside its orchestration): the name its summaries carry,
 * its run's own span, the log record its failure carries, and where it works. The composition root gathers the
 * features' kinds (`runKinds`); the history, its sweep and telemetry name none.
 */
export interface RunKind {
  /** The summaries' `kind` (lower-case words). */
  kind: string;
  /** The run's own span: what the workbook's runs chart and the docs' queries read. */
  span: string;
  /** The log record of a failed run: what the alert rules in infra/ count (shared/log/alerts.ts). */
  failedRecord: string;
  /** The orchestration instance that works on `run`. */
  instanceId(run: RunSummary, tenant: string): string;
  /** Whether that instance is the run's own (one per run) or the tenant's, reused by its runs in turn. */
  perRun: boolean;
  /** A kind started by a timer: its NCRONTAB schedule, as configured (the status page shows the next start). */
  schedule?(config: AppConfig): string;
  /** Its summaries' own details: what they hold beside every run's fields, and how the status page shows them. */
  details?: RunDetails;
}

/**
 * A kind's own part of its summaries (a sync's streams, an import's items): its schema — what the run history
 * keeps of it — how it is bounded to fit a stored summary, and how the status page shows it. The history, its
 * routes and the page read these and name no kind's fields.
 */
export interface RunDetails {
  /** The kind's own fields of a summary: parsed when a summary is recorded and when it is shown. */
  schema: z.ZodType<Record<string, unknown>>;
  /** The details bounded to fit a stored summary (`hard`: the summary is still too long: keep only what counts). */
  bound?(details: Record<string, unknown>, hard: boolean): Record<string, unknown>;
  /** The run's records read and changes made, for the page's table (none: the kind reads no records). */
  counts?(summary: RunSummary): { read: number; changes: number } | undefined;
  /** Its details on the status page (HTML, escaped): what the run did, beside its error. */
  html?(summary: RunSummary): string;
  /** Whether its details open by themselves (a run that waits for someone). */
  open?(summary: RunSummary): boolean;
  /** Its charts on the status page, from its runs, oldest first (HTML). */
  charts?(runs: RunSummary[]): string;
  /** What the page's "at a glance" says of the kind, from its runs (newest first). */
  glance?(runs: RunSummary[], context: { config: AppConfig; now: number }): StatusPart[];
}

/** The kind's details of a summary as its schema reads them (an empty record where it cannot). */
export function detailsOf(kind: RunKind | undefined, summary: RunSummary): Record<string, unknown> {
  const parsed = kind?.details?.schema.safeParse(summary);
  return parsed?.success ? parsed.data : {};
}

/**
 * A summary as the history keeps it: every run's fields, and its kind's details as the kind's schema reads them (a
 * section the kind does not declare is not kept), bounded to fit a stored summary — the kind's details by the kind.
 * A kind without details, or details its schema refuses (a mistake, never a reason to lose the run), keep the summary
 * as it was given.
 */
export function recordedSummary(kind: RunKind | undefined, summary: RunSummary): RunSummary {
  const details = kind?.details;
  if (!details) return boundedSummary(summary);
  const parsed = details.schema.safeParse(summary);
  if (!parsed.success) return boundedSummary(summary);
  const base = Object.fromEntries(
    Object.keys(runSummarySchema.shape).flatMap((k) =>
      k in summary ? [[k, summary[k as keyof RunSummary]]] : [],
    ),
  ) as RunSummary;
  const bound = details.bound;
  return boundedSummary({ ...base, ...parsed.data } as RunSummary, (s, hard) =>
    bound ? ({ ...s, ...bound(detailsOf(kind, s), hard) } as RunSummary) : s,
  );
}

/** The kinds the app runs, by name. */
export type RunKinds = Readonly<Record<string, RunKind>>;

export const runKindsOf = (kinds: readonly RunKind[]): RunKinds =>
  Object.fromEntries(kinds.map((k) => [k.kind, k]));
