import type { AccessLayer } from './access';
import type { CheckOutcome } from './check';
import type { AppConfig, SettingsPart } from './config';
import type { ErrorTable } from './errors';
import type { RunKind } from './runs/kind';

/**
 * What a feature gives the app, declared in its `feature.ts` and composed by shared/app.ts as the sinks are in
 * `SINKS`: its settings, its error codes, its kind of run, its doctor checks. Its functions are its workflows' files
 * under functions/. Configuration, errors, runs and telemetry read these lists and name no feature.
 */
export interface FeatureModule {
  name: string;
  /** Its settings (docs/configuration.md has a section for them). */
  settings?: SettingsPart;
  /** Its error codes, with their titles and actions (docs/errors.md lists them under the feature). */
  errors?: ErrorTable;
  /** Its kind of run: the run history's `kind`, the run's span, its failure record, where it works. */
  runs?: RunKind;
  /** Its set-up checks, run by `doctor` after the app's own (the tenant, secrets, storage, the session). */
  doctor?: readonly DoctorCheck[];
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
