import type { HttpResponseInit } from '@azure/functions';
import { appClock } from './clock';
import { appRoot } from './config/app-root';
import { ADMIN_FEATURE } from './admin/feature';
import type { AppConfig } from './config';
import { DEVICE_LOGIN_FEATURE } from './device-login/feature';
import { EXPORT_FEATURE } from './exports/feature';
import type { ExportSetup } from './exports/setup';
import type { DoctorCheck, FeatureModule } from './feature';
import type { Host } from './host';
import { IMPORT_FEATURE } from './imports/feature';
import type { ImportSetup } from './imports/setup';
import { appLogger } from './log';
import { door } from './net/door';
import { applyAppHeapFlags } from './node-flags';
import type { RunRecorder } from './runs/recorder';
import { runKindsOf, type RunKind } from './runs/kind';
import { appSettings } from './settings';
import { SYNC_FEATURE } from './sync/feature';
import type { SyncSetup } from './sync/setup';
import type { Telemetry } from './telemetry/setup';

/**
 * The app's features, side by side, as the sinks are in `SINKS`: each declares its settings, error codes, kind of
 * run and doctor checks (shared/feature.ts); its functions are its workflow's file under functions/. Adding one is
 * its folder, its `feature.ts` and one line here.
 */
export const FEATURES: readonly FeatureModule[] = [
  SYNC_FEATURE,
  EXPORT_FEATURE,
  IMPORT_FEATURE,
  DEVICE_LOGIN_FEATURE,
  ADMIN_FEATURE,
];

/** Every setting: the core's, the vocabulary's parts, the sinks' and the features' (docs/configuration.md). */
export const APP_SETTINGS = appSettings(FEATURES.flatMap((f) => (f.settings ? [f.settings] : [])));

/** Reads every setting once, naming every bad one in a single error (the app, the CLI, the tools). */
export const loadConfig = (
  env: Record<string, string | undefined>,
  options: { cwd?: string } = {},
): AppConfig => APP_SETTINGS.load(env, options);

/** The kinds of run the features declare. */
export const RUN_KINDS = runKindsOf(FEATURES.flatMap((f): RunKind[] => (f.runs ? [f.runs] : [])));

/** The features' own set-up checks, which `doctor` runs after the app's. */
export const FEATURE_CHECKS: readonly DoctorCheck[] = FEATURES.flatMap((f) => f.doctor ?? []);

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
    // The worker's heap held as the CLI's sync holds it (shared/node-flags.ts).
    applyAppHeapFlags(process.execArgv, process.env.NODE_OPTIONS);
    const tracing = Boolean(config.telemetry.otlpEndpoint || config.telemetry.appInsightsConnectionString);
    // The telemetry SDK loads at the first span or log record (docs/benchmarks.md, "Cold start"), not with the first
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
    let exportParts: ExportSetup | undefined;
    let imports: ImportSetup | undefined;
    let runs: RunRecorder | undefined;
    const self: App = {
      config,
      logger,
      clock: appClock,
      runKinds: RUN_KINDS,
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
        exportParts ??= exportSetup(config, self.access(), {
          clock: appClock,
          logger,
          // The tenant's catalog: an export reads the streams the sync reads.
          catalog: (require('./state/catalog-store') as typeof import('./state/catalog-store')).catalogStore(
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
        return exportParts;
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
