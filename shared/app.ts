import type { HttpResponseInit } from '@azure/functions';
import { ADMIN_FEATURE } from './admin/feature';
import { appClock } from './clock';
import type { AppConfig } from './config';
import { appRoot } from './config/app-root';
import { DEVICE_LOGIN_FEATURE } from './device-login/feature';
import { registerErrors } from './errors';
import { ERASURE_FEATURE } from './erasure/feature';
import { EXPORT_FEATURE } from './exports/feature';
import type { DoctorCheck, FeatureModule, Host, Part, RouteSample } from './feature';
import { IMPORT_FEATURE } from './imports/feature';
import { appLogger } from './log';
import { door } from './net/door';
import { applyAppHeapFlags } from './node-flags';
import { runKindsOf, type RunKind } from './runs/kind';
import type { RunRecorder } from './runs/recorder';
import { appSettings } from './settings';
import { SYNC_FEATURE } from './sync/feature';
import type { Telemetry } from './telemetry/sdk';

/**
 * The app's features, side by side, as the sinks are in `SINKS`: each declares its settings, error codes, kind of
 * run, doctor checks, parts and routes (shared/feature.ts); its functions are its workflow's file under functions/.
 * Adding one is its folder, its `feature.ts`, its functions' file and one line here — nothing here names what is
 * inside a feature.
 */
export const FEATURES: readonly FeatureModule[] = [
  SYNC_FEATURE,
  EXPORT_FEATURE,
  IMPORT_FEATURE,
  DEVICE_LOGIN_FEATURE,
  ADMIN_FEATURE,
  ERASURE_FEATURE,
];

// The features' error codes, registered as the app is composed: every code a run, a route or a summary carries has
// its title and action from here on (shared/errors/codes.ts).
for (const f of FEATURES) if (f.errors) registerErrors(f.name, f.errors);

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

/** Every feature's HTTP routes, with a request that reaches each (the fault suite calls them all). */
export const FEATURE_ROUTES: readonly RouteSample[] = FEATURES.flatMap((f) => f.routes ?? []);

/**
 * What every function shares, built once per process: configuration read and validated at start-up (never
 * `process.env` in a handler), the logger and telemetry, the access layer, and each feature's parts on first use.
 * It is every feature's host (shared/feature.ts).
 */
export type App = Host;

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
        const { setupTelemetry } = require('./telemetry/sdk') as typeof import('./telemetry/sdk');
        const { azureCredential } = require('./secrets/credential') as typeof import('./secrets/credential');
        const secret = config.telemetry.otlpHeadersSecretName;
        telemetry = setupTelemetry(config.telemetry, {
          credential: () => azureCredential(config),
          otlpHeaders: secret ? otlpHeaders(config, secret, () => logger) : undefined,
        });
      }
      return telemetry;
    };
    // In Azure, records reach Application Insights as OpenTelemetry logs; a stderr copy would arrive twice.
    const logger = appLogger({
      stderr: !(config.hosted && config.telemetry.appInsightsConnectionString),
      beforeRecord: tracing ? ensureTelemetry : undefined,
    });
    const parts = new Map<Part<unknown>, unknown>();
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
      part: <S>(p: Part<S>): S => {
        if (!parts.has(p)) parts.set(p, p.build(self));
        return parts.get(p) as S;
      },
      runs: () => {
        const { runRecorder } = require('./runs/parts') as typeof import('./runs/parts');
        runs ??= runRecorder(config, { clock: appClock, logger, kinds: RUN_KINDS });
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
/** The OTLP headers secret, read through the app's own secret store (./telemetry/otlp-headers.ts). */
function otlpHeaders(config: AppConfig, secret: string, logger: () => ReturnType<typeof appLogger>) {
  const { createSecretStore } = require('./secrets') as typeof import('./secrets');
  const { otlpHeadersFromSecret } =
    require('./telemetry/otlp-headers') as typeof import('./telemetry/otlp-headers');
  const store = createSecretStore(config);
  return otlpHeadersFromSecret(
    (o) => store.get(secret, o),
    // The secret's name and why, never its value; the record waits for the next export that works.
    (reason) => logger().log('warn', 'otlp headers unreadable', { reason: `${secret}: ${reason}` }),
  );
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
