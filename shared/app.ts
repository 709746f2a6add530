import type { HttpResponseInit } from '@azure/functions';
import { appClock } from './clock';
import { appRoot } from './config/app-root';
import { loadConfig } from './settings';
import type { ExportSetup } from './exports/setup';
import type { ImportSetup } from './imports/setup';
import { LOGIN_RUNS } from './device-login/orchestration';
import { EXPORT_RUNS } from './exports/orchestration';
import type { Host } from './host';
import { IMPORT_RUNS } from './imports/orchestration';
import { appLogger } from './log';
import { door } from './net/door';
import { applyAppHeapFlags } from './node-flags';
import type { RunRecorder } from './runs/recorder';
import type { RunInstances } from './runs/sweep';
import { SYNC_RUNS } from './sync/orchestration';
import type { SyncSetup } from './sync/setup';
import type { Telemetry } from './telemetry/setup';

/**
 * What every function shares, built once per process: configuration read and validated at start-up
 * (never `process.env` in a handler), the logger and telemetry, the access layer and each feature's set-up on
 * first use. It is every feature's host (shared/host.ts) at once.
 */
export interface App extends Host {
  /** Streams, state and sinks of the sync, built on first use. */
  sync(): SyncSetup;
  /** Streams, storage and ledger of the export webhook, built on first use. */
  exports(): ExportSetup;
  /** Operations, store and ledger of the import webhook, built on first use. */
  imports(): ImportSetup;
  /** Where each kind of run works (the run history's sweep reads it). */
  runInstances: RunInstances;
}

let app: App | undefined;

/* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use: the Azure SDKs, the GraphQL client
   and the telemetry SDK would cost a cold start hundreds of milliseconds otherwise */
export function appContext(): App {
  if (!app) {
    // Invalid settings fail here, at start-up, with one message naming every bad setting.
    // Files the settings name (config/…) are the package's: resolved against the app's folder, wherever the host
    // starts the worker.
    const config = loadConfig(process.env, { cwd: appRoot(__dirname) });
    // The worker's heap held as the CLI's sync holds it (shared/node-flags.ts): a 1 M-record sync peaked ~70 MB lower.
    applyAppHeapFlags(process.execArgv, process.env.NODE_OPTIONS);
    const tracing = Boolean(config.telemetry.otlpEndpoint || config.telemetry.appInsightsConnectionString);
    // The telemetry SDK (~175 ms of a cold start) loads at the first span or log record, not with the first
    // invocation: a health probe or a status page answers without it (`npm run bench -- coldstart`).
    let telemetry: Telemetry | undefined;
    let telemetryLoaded = !tracing;
    const ensureTelemetry = () => {
      if (!telemetryLoaded) {
        telemetryLoaded = true;
        const { setupTelemetry } = require('./telemetry/setup') as typeof import('./telemetry/setup');
        const { azureCredential } = require('./secrets/credential') as typeof import('./secrets/credential');
        telemetry = setupTelemetry(config.telemetry, { credential: () => azureCredential(config) });
      }
      return telemetry;
    };
    // In Azure, records reach Application Insights as OpenTelemetry logs; a stderr copy would arrive twice.
    const logger = appLogger({
      stderr: !(config.hosted && config.telemetry.appInsightsConnectionString),
      beforeRecord: tracing ? ensureTelemetry : undefined,
    });
    let sync: SyncSetup | undefined;
    let exports: ExportSetup | undefined;
    let imports: ImportSetup | undefined;
    let runs: RunRecorder | undefined;
    const self: App = {
      config,
      logger,
      clock: appClock,
      runInstances: { sync: SYNC_RUNS, export: EXPORT_RUNS, import: IMPORT_RUNS, login: LOGIN_RUNS },
      access: () => {
        const { accessLayer } = require('./access') as typeof import('./access');
        return accessLayer(config, { logger, clock: appClock });
      },
      sync: () => {
        const { syncSetup } = require('./sync/setup') as typeof import('./sync/setup');
        sync ??= syncSetup(config, self.access(), { clock: appClock, logger });
        return sync;
      },
      exports: () => {
        const { exportSetup } = require('./exports/setup') as typeof import('./exports/setup');
        exports ??= exportSetup(config, self.access(), {
          clock: appClock,
          logger,
          // The catalog the sync keeps: an export reads the same streams.
          catalog: (require('./sync/state-store') as typeof import('./sync/state-store')).syncStateStore(
            config,
          ),
          // The run begins in the history (as running) and in its trace as soon as the export is accepted.
          accepted: (input) =>
            self.traced(
              'export accepted',
              { runId: input.id, tenant: input.tenant, count: input.streams.length },
              () => {
                const { exportSummary } = require('./exports/summary') as typeof import('./exports/summary');
                return self.runs().save(exportSummary(input, []));
              },
            ),
        });
        return exports;
      },
      imports: () => {
        const { importSetup } = require('./imports/setup') as typeof import('./imports/setup');
        imports ??= importSetup(config, self.access(), {
          clock: appClock,
          logger,
          accepted: (input) =>
            self.traced(
              'import accepted',
              { runId: input.id, tenant: input.tenant, count: input.total },
              () => {
                const { importSummary } = require('./imports/summary') as typeof import('./imports/summary');
                return self.runs().save(
                  importSummary(input, {
                    applied: 0,
                    failed: 0,
                    outcome_unknown: 0,
                    skipped: 0,
                    pending: input.total,
                  }),
                );
              },
            ),
        });
        return imports;
      },
      runs: () => {
        const { runRecorder } = require('./runs/setup') as typeof import('./runs/setup');
        runs ??= runRecorder(config, { clock: appClock, logger });
        return runs;
      },
      async traced(name, fields, work, failure) {
        const telemetry = ensureTelemetry();
        if (!telemetry) return work();
        const { inSpan, runContext } = require('./telemetry') as typeof import('./telemetry');
        try {
          return await inSpan(name, fields, work, {
            ...(fields.runId ? { parent: runContext(String(fields.runId)) } : {}),
            failure,
          });
        } finally {
          await telemetry.flush();
        }
      },
    };
    app = self;
  }
  return app;
}
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * An HTTP function's handler behind its door (shared/net/door.ts): whatever it throws is answered as a problem
 * document and logged with the app's logger — or stderr's, when the configuration itself is what failed.
 */
export const httpDoor = <A extends unknown[]>(
  what: string,
  handler: (...args: A) => Promise<HttpResponseInit> | HttpResponseInit,
) => door(what, handler, { logger: () => appContext().logger });
