import type { Clock } from '../clock';
import type { Logger } from '../log';
import { inSpan } from '../telemetry';
import type { RunHistory } from './history';
import { recordedSummary, type RunKinds } from './kind';
import { minimalSummary, type RunSummary } from './summary';

/**
 * Writes run summaries without ever failing the run: a storage error is logged and the run goes on. Runs older
 * than the retention are purged by the app itself, at most once an hour per process.
 */
export class RunRecorder {
  private lastPurgeMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly history: RunHistory,
    private readonly options: { logger: Logger; clock: Clock; retentionDays: number; kinds?: RunKinds },
  ) {}

  /** Records the run: every run's fields and what its kind declares of its details (./kind.ts), bounded to fit. */
  async save(given: RunSummary): Promise<void> {
    const summary = recordedSummary(this.options.kinds?.[given.kind], given);
    try {
      await inSpan('run history', { runId: summary.id, outcome: summary.outcome }, () =>
        this.history.record(summary),
      );
    } catch (err) {
      this.options.logger.log('warn', 'run history not written', {
        runId: summary.id,
        reason: (err as Error).message.split('\n')[0],
      });
      // The least it must say, so the run does not stay "running" there for ever.
      try {
        await this.history.record(minimalSummary(summary));
      } catch (again) {
        this.options.logger.log('error', 'run history not written', {
          runId: summary.id,
          reason: (again as Error).message.split('\n')[0],
        });
      }
      return;
    }
    const now = this.options.clock.now();
    if (now - this.lastPurgeMs < 3_600_000) return;
    this.lastPurgeMs = now;
    try {
      const cutoff = new Date(now - this.options.retentionDays * 86_400_000).toISOString();
      const count = await this.history.purge(cutoff);
      if (count) this.options.logger.log('info', 'run history purged', { count });
    } catch (err) {
      this.options.logger.log('warn', 'run history not purged', {
        reason: (err as Error).message.split('\n')[0],
      });
    }
  }
}
