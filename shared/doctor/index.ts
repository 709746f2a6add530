import type { AccessLayer } from '../access';
import type { Check, CheckOutcome } from '../check';
import type { AppConfig } from '../config';
import { IntegrationError } from '../errors';
import type { DoctorCheck, DoctorContext } from '../feature';
import { withTimeout } from '../net/retry';
import { sinkModule, type SinkModule } from '../sinks';
import { catalogChecks } from './catalog';
import { SETUP_CHECKS, STORAGE_CHECKS } from './app-checks';
import { short } from './short';
import { TENANT_CHECKS } from './tenant';

export type { Check } from '../check';
export { apiCredentialsPage } from './tenant';

/**
 * `tenant-integrations doctor` and GET /api/manage/doctor: every set-up check in order, each ok / warn / fail
 * with what was found and the one action that fixes it. Never a secret or token in any field: a check says
 * whether a secret is there, not what it is.
 */
export interface DoctorOptions {
  /** Per check (default 10 s). */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
  /**
   * The tenant is a sandbox started for this command alone (the CLI with nothing configured and no local stack):
   * no admin session outlasts it, so none is looked for.
   */
  embeddedSandbox?: boolean;
  /** The tenant is the local sandbox (embedded, or `npm start`'s): its built-in import operations apply, as there. */
  localSandbox?: boolean;
  /** The features' own checks (shared/app.ts: `FEATURE_CHECKS`), run after the app's. */
  checks?: readonly DoctorCheck[];
}

/** The checks in the order they run: each later one may depend on an earlier one having passed. */
const CHECKS: readonly DoctorCheck[] = [...SETUP_CHECKS, ...TENANT_CHECKS, ...STORAGE_CHECKS];

/**
 * Runs the app's checks, then the features' (`options.checks`, as shared/app.ts composes them), the catalog's and
 * each configured sink's own; `configuration` is assumed valid (the caller reports a ConfigError).
 */
export async function runDoctor(
  config: AppConfig,
  access: AccessLayer,
  options: DoctorOptions = {},
): Promise<Check[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const ctx: DoctorContext = {
    config,
    access,
    passed: new Set(),
    embeddedSandbox: options.embeddedSandbox ?? false,
    localSandbox: options.localSandbox ?? options.embeddedSandbox ?? false,
  };
  const checks: Check[] = [];
  const run = async (name: string, check: DoctorCheck['run']) => {
    let signal: AbortSignal | undefined;
    let outcome: CheckOutcome;
    try {
      outcome = await withTimeout(timeoutMs, options.abortSignal, (s) => check(ctx, (signal = s)));
    } catch (err) {
      outcome = {
        state: 'fail',
        found: signal?.aborted ? `no answer within ${timeoutMs / 1000} s` : short(err),
        action:
          err instanceof IntegrationError ? undefined : 'See the finding; run again with the fix in place.',
      };
    }
    if (outcome.state === 'ok') ctx.passed.add(name);
    checks.push({ name, ...outcome });
  };
  for (const check of [...CHECKS, ...(options.checks ?? [])]) await run(check.name, check.run);
  let signal: AbortSignal | undefined;
  try {
    checks.push(
      ...(await withTimeout(timeoutMs * 3, options.abortSignal, (s) => catalogChecks(ctx, (signal = s)))),
    );
  } catch (err) {
    checks.push({
      name: 'catalog',
      state: 'fail',
      found: signal?.aborted ? `no answer within ${(timeoutMs * 3) / 1000} s` : short(err),
      ...(err instanceof IntegrationError
        ? {}
        : { action: 'See the finding; run again with the fix in place.' }),
    });
  }
  const sinkContext = { config, secrets: access.secrets };
  for (const spec of config.sinkSpecs)
    await run(`sink ${spec.kind}`, (_ctx, signal) =>
      (sinkModule(spec.kind) as SinkModule).doctor(spec, sinkContext, signal),
    );
  return checks;
}

export const doctorFailed = (checks: Check[]) => checks.some((c) => c.state === 'fail');
