import { randomBytes } from 'node:crypto';
import type { Host } from '../feature';
import { tenantEndpoints } from '../auth/endpoints';
import { errorText, type ErrorCode } from '../errors';
import type { RunSummary } from '../runs/summary';
import type { SecretStore } from '../secrets/types';
import { endRunSpan } from '../telemetry';
import type { DeviceCode } from './flow';
import { pollDeviceToken, requestDeviceCode } from './idp';
import {
  endInputSchema,
  LOGIN_RUN,
  loginRunSchema,
  pollInputSchema,
  type DeviceCodeTicket,
  type LoginRun,
  type PollResult,
} from './orchestration';

/**
 * The device login's activities (functions/device-login-*.ts register them under DEVICE_LOGIN's names): the HTTP
 * of the flow, the device code kept in the session secret store, and the login's run in the history and its trace.
 */

const HANDLE = /^[0-9a-f]{32}$/;
const secretName = (handle: string) => {
  if (!HANDLE.test(handle)) throw new Error('not a device-code handle');
  return `device-code-${handle}`;
};

/** Stores the device code under a fresh, never-reused name (Key Vault keeps deleted names reserved). */
export async function keepDeviceCode(store: SecretStore, code: DeviceCode): Promise<DeviceCodeTicket> {
  const { deviceCode, ...rest } = code;
  const handle = randomBytes(16).toString('hex');
  await store.set(secretName(handle), deviceCode);
  return { ...rest, handle };
}

export const readDeviceCode = (store: SecretStore, handle: string) => store.get(secretName(handle));

export const forgetDeviceCode = (store: SecretStore, handle: string) => store.delete(secretName(handle));

const OUTCOME_CODE: Record<string, ErrorCode> = {
  denied: 'device_login_denied',
  expired: 'device_login_expired',
  failed: 'device_login_failed',
  cancelled: 'device_login_cancelled',
};

/** The login's summary for the run history: succeeded when someone signed in, else why not. */
export function loginSummary(
  run: LoginRun,
  view?: { state: string; error?: string },
  finishedAt?: string,
): RunSummary {
  const code = view ? OUTCOME_CODE[view.state] : undefined;
  return {
    id: run.runId,
    kind: 'login',
    trigger: 'manual',
    startedAt: run.startedAt,
    ...(finishedAt
      ? { finishedAt, durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(run.startedAt)) }
      : {}),
    outcome: !finishedAt ? 'running' : view?.state === 'authorised' ? 'succeeded' : 'failed',
    ...(finishedAt && code
      ? { error: { code, message: view?.error ?? errorText(code).title, action: errorText(code).action } }
      : {}),
  };
}

/**
 * Activity body: the device authorization request (`client_id=portal`, `scope=openid`; docs/service-rules.md). The
 * device code goes to the session secret store; the orchestration (and so its history) gets a ticket instead.
 * The login begins in the run history.
 */
export async function requestCodeActivity(app: Host, input: unknown): Promise<DeviceCodeTicket> {
  const run = loginRunSchema.parse(input);
  return app.traced('device login code', { runId: run.runId }, async () => {
    await app.runs().save(loginSummary(run));
    const access = app.access();
    return keepDeviceCode(access.sessionSecrets, await requestDeviceCode(tenantEndpoints(access.tenant)));
  });
}

/**
 * Activity body: one poll, given the ticket's handle (the device code is read from the secret store). On success
 * the tokens go straight into the delegated session (refresh token to the secret store); the orchestrator only
 * learns who signed in.
 */
export async function pollActivity(app: Host, input: unknown): Promise<PollResult> {
  const { handle, runId } = pollInputSchema.parse(input);
  return app.traced('device login poll', { runId }, async () => {
    const access = app.access();
    const deviceCode = await readDeviceCode(access.sessionSecrets, handle);
    const { outcome, tokens } = await pollDeviceToken(tenantEndpoints(access.tenant), deviceCode);
    if (!tokens) return { outcome };
    const session = await access.delegated.connect(tokens);
    return { outcome, person: { username: session.username, name: session.name } };
  });
}

/**
 * Activity body: the login has ended (any way): its device code leaves the secret store, and it ends in the run
 * history and its trace.
 */
export async function forgetActivity(app: Host, input: unknown): Promise<void> {
  const { handle, view, ...run } = endInputSchema.parse(input);
  await app.traced('device login end', { runId: run.runId }, async () => {
    if (handle) await forgetDeviceCode(app.access().sessionSecrets, handle);
    const finishedAt = new Date(app.clock.now()).toISOString();
    const summary = loginSummary(run, view, finishedAt);
    const ok = summary.outcome === 'succeeded';
    app.logger.log(ok ? 'info' : 'warn', ok ? 'device login succeeded' : LOGIN_RUN.failedRecord, {
      runId: run.runId,
      tenant: app.config.tenant?.name,
      code: summary.error?.code,
    });
    await app.runs().save(summary);
    endRunSpan(
      LOGIN_RUN.span,
      run.runId,
      run.startedAt,
      { kind: 'login', outcome: summary.outcome, state: view.state },
      summary.error?.code,
    );
  });
}
