import type { AccessLayer } from './access';
import { appClock } from './clock';
import { loadConfig, type AppConfig } from './config';
import { stderrLogger, type Logger } from './log';

/**
 * What every function shares, built once per process: configuration read and validated at start-up
 * (never `process.env` inside a handler), the logger, and the access layer on first use.
 */
export interface App {
  config: AppConfig;
  logger: Logger;
  access(): AccessLayer;
}

let app: App | undefined;

export function appContext(): App {
  if (!app) {
    // Invalid settings fail here, at start-up, with one message naming every bad setting.
    const config = loadConfig(process.env);
    const logger = stderrLogger();
    app = {
      config,
      logger,
      // Loaded on first use: the Azure SDKs and GraphQL client cost a cold start ~200 ms otherwise.
      access: () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { accessLayer } = require('./access') as typeof import('./access');
        return accessLayer(config, { logger, clock: appClock });
      },
    };
  }
  return app;
}
