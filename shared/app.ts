import type { AccessLayer } from './access';
import { appClock, type Clock } from './clock';
import { loadConfig, type AppConfig } from './config';
import { stderrLogger, type Logger } from './log';
import type { ExportSetup } from './exports/setup';
import type { RunRecorder } from './runs/recorder';
import type { SyncSetup } from './sync/setup';

/**
 * What every function shares, built once per process: configuration read and validated at start-up
 * (never `process.env` inside a handler), the logger, and the access layer on first use.
 */
export interface App {
  config: AppConfig;
  logger: Logger;
  /** The host's clock (movable in the local host); what every function reads time from. */
  clock: Clock;
  access(): AccessLayer;
  /** Streams, state and sinks of the sync, built on first use. */
  sync(): SyncSetup;
  /** Streams, storage and ledger of the export webhook, built on first use. */
  exports(): ExportSetup;
  /** Run summaries of syncs and exports (never fails a run), built on first use. */
  runs(): RunRecorder;
}

let app: App | undefined;

export function appContext(): App {
  if (!app) {
    // Invalid settings fail here, at start-up, with one message naming every bad setting.
    const config = loadConfig(process.env);
    const logger = stderrLogger();
    let sync: SyncSetup | undefined;
    let exports: ExportSetup | undefined;
    let runs: RunRecorder | undefined;
    const self: App = {
      config,
      logger,
      clock: appClock,
      // Loaded on first use: the Azure SDKs and GraphQL client cost a cold start ~200 ms otherwise.
      access: () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { accessLayer } = require('./access') as typeof import('./access');
        return accessLayer(config, { logger, clock: appClock });
      },
      sync: () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { syncSetup } = require('./sync/setup') as typeof import('./sync/setup');
        sync ??= syncSetup(config, self.access(), { clock: appClock, logger });
        return sync;
      },
      exports: () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { exportSetup } = require('./exports/setup') as typeof import('./exports/setup');
        exports ??= exportSetup(config, self.access(), { clock: appClock, logger });
        return exports;
      },
      runs: () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { runRecorder } = require('./runs/setup') as typeof import('./runs/setup');
        runs ??= runRecorder(config, { clock: appClock, logger });
        return runs;
      },
    };
    app = self;
  }
  return app;
}
