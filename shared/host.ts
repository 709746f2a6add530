import type { AccessLayer } from './access';
import type { Clock } from './clock';
import type { AppConfig } from './config';
import type { LogData, Logger } from './log';
import type { RunKinds } from './runs/kind';
import type { RunRecorder } from './runs/recorder';

/**
 * What the composition root (shared/app.ts) gives every feature. A feature declares the host it needs — this, plus
 * its own set-up (`SyncHost`, `ExportHost`, `ImportHost`) or less (`Pick<Host, …>`) — and never imports the app: the
 * app satisfies each of them, and a test can hand a feature exactly what it uses.
 */
export interface Host {
  config: AppConfig;
  logger: Logger;
  /** The host's clock (movable in the local host); what every function reads time from. */
  clock: Clock;
  access(): AccessLayer;
  /** Run summaries of every kind (never fails a run), built on first use. */
  runs(): RunRecorder;
  /** The kinds of run the features declare. */
  runKinds: RunKinds;
  /**
   * One invocation's work in its span — a child of its run's span when `fields.runId` names one — with its
   * telemetry sent before it returns (the host may freeze the process right after). `failure` names the code of a
   * failure the work returns rather than throws, so its span is marked failed too.
   */
  traced<T>(
    name: string,
    fields: LogData,
    work: () => Promise<T>,
    failure?: (result: T) => string | undefined,
  ): Promise<T>;
}
