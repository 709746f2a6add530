import type { Clock } from '../shared/clock';
import type { Logger } from '../shared/log';
import { triggerOf, type Registration } from './functions-core';
import { nextOccurrence, parseNcrontab, type Schedule } from '../shared/ncrontab';

interface TimerJob {
  name: string;
  schedule: Schedule;
  next: number;
  last?: number;
  running: boolean;
  runs: number;
  skipped: number;
}

/** Runs timer triggers on their NCRONTAB schedule (host clock), `runOnStartup` honoured, never overlapping. */
export class TimerRunner {
  readonly jobs = new Map<string, TimerJob>();
  private ticker?: NodeJS.Timeout;

  constructor(
    registrations: Map<string, Registration>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly invoke: (name: string, timer: unknown) => Promise<unknown>,
    private readonly resolveSetting: (value: string) => string,
  ) {
    for (const [name, reg] of registrations) {
      const trigger = triggerOf(reg.metadata);
      if (trigger.type !== 'timerTrigger') continue;
      const expression = this.resolveSetting(String(trigger.schedule));
      let schedule: Schedule;
      try {
        schedule = parseNcrontab(expression);
      } catch (err) {
        throw new Error(
          `timer function "${name}": invalid schedule "${expression}": ${(err as Error).message}`,
        );
      }
      const job: TimerJob = {
        name,
        schedule,
        next: nextOccurrence(schedule, clock.now()),
        running: false,
        runs: 0,
        skipped: 0,
      };
      this.jobs.set(name, job);
      if (trigger.runOnStartup) void this.fire(job, false);
    }
  }

  start(): void {
    this.ticker = setInterval(() => this.tick(), 100);
    this.ticker.unref();
  }

  stop(): void {
    if (this.ticker) clearInterval(this.ticker);
  }

  tick(): void {
    const now = this.clock.now();
    for (const job of this.jobs.values()) {
      if (now < job.next) continue;
      const pastDue = now - job.next > 1000;
      job.next = nextOccurrence(job.schedule, now);
      void this.fire(job, pastDue);
    }
  }

  /** Runs the function now unless a run is still going (then the tick is skipped and logged). */
  async fire(job: TimerJob, isPastDue: boolean): Promise<boolean> {
    if (job.running) {
      job.skipped++;
      this.logger.log('warn', 'timer tick skipped: the previous run is still going', {
        reason: job.name,
        count: job.skipped,
      });
      return false;
    }
    job.running = true;
    const now = this.clock.now();
    try {
      await this.invoke(job.name, {
        isPastDue,
        schedule: { adjustForDST: false },
        scheduleStatus: {
          last: new Date(job.last ?? now).toISOString(),
          next: new Date(job.next).toISOString(),
          lastUpdated: new Date(now).toISOString(),
        },
      });
    } catch (err) {
      this.logger.log('error', 'timer function failed', { reason: `${job.name}: ${(err as Error).message}` });
    } finally {
      job.last = now;
      job.running = false;
      job.runs++;
    }
    return true;
  }
}
