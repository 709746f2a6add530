import type { AppConfig } from '../config';
import type { RunSummary } from './summary';

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
}

/** The kinds the app runs, by name. */
export type RunKinds = Readonly<Record<string, RunKind>>;

export const runKindsOf = (kinds: readonly RunKind[]): RunKinds =>
  Object.fromEntries(kinds.map((k) => [k.kind, k]));
