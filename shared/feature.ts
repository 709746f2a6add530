import type { AccessLayer } from './access';
import type { CheckOutcome } from './check';
import type { Clock } from './clock';
import type { AppConfig, SettingsPart } from './config';
import type { ErrorTable } from './errors';
import type { LogData, Logger } from './log';
import type { RunKind, RunKinds } from './runs/kind';
import type { RunRecorder } from './runs/recorder';

/*
 * The contract between the app and its features, both ways: what a feature gives the app (`FeatureModule`, declared
 * in its `feature.ts` and composed by shared/app.ts as the sinks are in `SINKS`) and what the app gives every feature
 * (`Host`). Configuration, errors, runs, telemetry, the doctor, the lint's floors and the fault suite's routes read the
 * composed list and name no feature.
 */

/**
 * What a feature's functions work with, made from configuration by the host the first time they ask for it
 * (`host.part(X_PARTS)`) and kept for the process: its stores, clients, ledgers. `build` loads what it needs when it
 * runs, so registering the functions loads none of it (docs/benchmarks.md, "Cold start").
 */
export interface Part<S> {
  readonly name: string;
  build(host: Host): S;
}

export const part = <S>(name: string, build: (host: Host) => S): Part<S> => ({ name, build });

/**
 * What the composition root (shared/app.ts) gives every feature. A feature takes the host it needs — this, or less
 * (`Pick<Host, …>`) — and never imports the app: the app satisfies each, and a test can hand a feature exactly what
 * it uses.
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
  /** A feature's parts, built on first use and kept (one per process). */
  part<S>(p: Part<S>): S;
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

/** An HTTP route of a feature, with a request that reaches it: the fault suite calls every route of every feature. */
export interface RouteSample {
  method: 'GET' | 'POST';
  /** The route as the host registers it (`exports/{id}`). */
  route: string;
  /** A path that reaches it (its parameters filled in). */
  path: string;
  body?: unknown;
  /** Which key the route takes: the function key, the admin (master) key, or none. */
  key: 'function' | 'master' | null;
}

/**
 * What a feature gives the app: its settings, its error codes, its kind of run, its doctor checks, its parts and its
 * routes. Its functions are its workflow's file under functions/.
 */
export interface FeatureModule {
  name: string;
  /** Its settings (docs/configuration.md has a section for them). */
  settings?: SettingsPart;
  /** Its error codes, with their titles and actions: registered when the app is composed (docs/errors.md). */
  errors?: ErrorTable;
  /** Its kind of run: the run history's `kind`, the run's span, its failure record, its details, where it works. */
  runs?: RunKind;
  /** Its set-up checks, run by `doctor` after the app's own (the tenant, secrets, storage, the session). */
  doctor?: readonly DoctorCheck[];
  /** What its functions work with, built by the host on first use. */
  parts?: Part<unknown>;
  /** Its HTTP routes. */
  routes?: readonly RouteSample[];
}

/** What every doctor check is given: the settings, the access layer, and which earlier checks passed. */
export interface DoctorContext {
  config: AppConfig;
  access: AccessLayer;
  passed: Set<string>;
  /** The tenant is a sandbox started for this command alone: no admin session outlasts it. */
  embeddedSandbox: boolean;
  /** The tenant is the local sandbox (embedded, or `npm start`'s). */
  localSandbox: boolean;
}

/** One set-up check: ok, warn or fail, what it found, and the one action that fixes it. */
export interface DoctorCheck {
  name: string;
  run(ctx: DoctorContext, signal: AbortSignal): Promise<CheckOutcome>;
}

/** What an embedded sandbox's admin session would need: a tenant that lasts longer than one command. */
export const LASTING_SESSION = {
  state: 'warn',
  action:
    'Run `npm start`, then `tenant-integrations login` against it in another terminal — or set TENANT_* for a real tenant.',
} as const;
