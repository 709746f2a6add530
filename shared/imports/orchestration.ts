import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import { REQUEST_ID } from '../ids';
import type { ApplyResult, Counts } from './apply';
import { type ErrorCode } from '../errors';
import type { RunKind } from '../runs/kind';

export const IMPORT = {
  orchestrator: 'importRun',
  apply: 'importApply',
  session: 'importSession',
  waiting: 'importWaiting',
  finish: 'importFinish',
  notify: 'importNotify',
} as const;

export const importInstanceId = (id: string) => `import-${id}`;

/** The import's kind of run: each in its own instance. */
export const IMPORT_RUN: RunKind = {
  kind: 'import',
  span: 'import run',
  failedRecord: 'import failed',
  instanceId: (run) => importInstanceId(run.id),
  perRun: true,
};
export const IMPORT_ID = REQUEST_ID;

/** How often an import waiting for an admin looks at the session again. */
export const SESSION_CHECK_MS = 60_000;
/** After an apply step that found another run of itself holding the import, the next one starts this much later. */
export const SUPERSEDED_WAIT_MS = 30_000;
/** An import waiting for the tenant tries again after this, doubling each time up to TENANT_RETRY_MAX_MS. */
export const TENANT_RETRY_MS = 30_000;
export const TENANT_RETRY_MAX_MS = 15 * 60_000;

/** The wait before the `attempt`-th retry of an import waiting for the tenant (1-based). */
export const tenantRetryMs = (attempt: number) =>
  Math.min(TENANT_RETRY_MAX_MS, TENANT_RETRY_MS * 2 ** Math.min(attempt - 1, 10));

const countsSchema = z.object({
  applied: z.number().int(),
  failed: z.number().int(),
  // Absent in the histories of imports started before the state existed.
  outcome_unknown: z.number().int().default(0),
  skipped: z.number().int(),
  pending: z.number().int(),
});

/** The orchestration's input: names and counts only — the items live in the import store, never in history. */
export const importInputSchema = z.object({
  id: z.string().regex(IMPORT_ID),
  tenant: z.string(),
  operation: z.string(),
  total: z.number().int().min(1),
  requestedAt: z.string(),
  adminWaitMs: z.number().int().min(0),
  /** The admin whose session accepted the import: only that person's session applies it (absent: imports before). */
  person: z.string().optional(),
  /** The batch as accepted (store.ts, batchDigest): the apply step refuses one that changed in storage since. */
  digest: z.string().optional(),
  callbackUrl: z.string().optional(),
  /**
   * Set while the import waits — for an admin to sign in, or for the tenant to be available again — (it continues
   * as new every check). `since` is when the wait began, `attempts` the tenant's retries so far.
   */
  waiting: z
    .object({
      since: z.string(),
      reason: z.string(),
      for: z.enum(['admin', 'tenant']).default('admin'),
      attempts: z.number().int().min(0).optional(),
    })
    .optional(),
  counts: countsSchema.optional(),
});
export type ImportInput = z.infer<typeof importInputSchema>;

export const IMPORT_STATES = [
  'queued',
  'running',
  'waiting_for_admin',
  'waiting_for_tenant',
  'completed',
  'failed',
] as const;

const waitSchema = z.object({ since: z.string(), until: z.string(), reason: z.string(), action: z.string() });

/** An import as GET /api/imports/{id} shows it (without the per-item results, read from the store). */
export const importStateSchema = z.object({
  id: z.string(),
  operation: z.string(),
  state: z.enum(IMPORT_STATES),
  requestedAt: z.string(),
  finishedAt: z.string().optional(),
  total: z.number().int(),
  /** Who the import was accepted under: the admin whose session applies it. */
  person: z.string().optional(),
  counts: countsSchema,
  waitingForAdmin: waitSchema.extend({ person: z.string().optional() }).optional(),
  waitingForTenant: waitSchema.extend({ nextAttemptAt: z.string().optional() }).optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  callback: z
    .object({ status: z.enum(['pending', 'delivered', 'failed']), error: z.string().optional() })
    .optional(),
});
export type ImportState = z.infer<typeof importStateSchema>;

export const noneDone = (total: number): Counts => ({
  applied: 0,
  failed: 0,
  outcome_unknown: 0,
  skipped: 0,
  pending: total,
});

export const waitingAction = (person?: string) =>
  `${person ? `${person}, the admin this import was accepted under,` : 'An admin'} must sign in on the admin page (/api/manage) or with \`tenant-integrations login\`; the import resumes within a minute.`;

export const TENANT_WAITING_ACTION =
  'Nothing to do unless it lasts: the items not sent are sent when the tenant answers again (checked with growing pauses, at most 15 minutes apart); check the tenant service’s status if it goes on.';

export function importState(
  input: ImportInput,
  state: ImportState['state'],
  extra: Partial<ImportState> = {},
): ImportState {
  const waiting = input.waiting;
  const until = waiting && new Date(Date.parse(waiting.since) + input.adminWaitMs).toISOString();
  return {
    id: input.id,
    operation: input.operation,
    state,
    requestedAt: input.requestedAt,
    total: input.total,
    ...(input.person ? { person: input.person } : {}),
    counts: input.counts ?? noneDone(input.total),
    ...(waiting && until && state === 'waiting_for_admin'
      ? {
          waitingForAdmin: {
            since: waiting.since,
            until,
            reason: waiting.reason,
            action: waitingAction(input.person),
            ...(input.person ? { person: input.person } : {}),
          },
        }
      : {}),
    ...(waiting && until && state === 'waiting_for_tenant'
      ? {
          waitingForTenant: {
            since: waiting.since,
            until,
            reason: waiting.reason,
            action: TENANT_WAITING_ACTION,
          },
        }
      : {}),
    ...extra,
  };
}

/** What the session check answers: whether the import's admin is signed in, and who is (older histories: a boolean). */
export interface SessionCheck {
  ready: boolean;
  signedIn?: string;
}

/**
 * One import: its items applied by activities (each a share, resumable by the per-item ledger) with the session of
 * the admin it was accepted under. A lost session pauses it — waiting_for_admin, checked each minute (continue-as-new
 * keeps the history short) — until that admin signs in or IMPORTS_ADMIN_WAIT passes; an unavailable tenant pauses it
 * too — waiting_for_tenant, tried again with growing pauses within the same wait. Then the summary, then the signed
 * callback. Deterministic: time only from the context.
 */
export function* importOrchestrator(
  context: OrchestrationContext,
): Generator<Task, ImportState | undefined, unknown> {
  let input = importInputSchema.parse(context.df.getInput());
  const now = () => context.df.currentUtcDateTime.getTime();
  const deadlineOf = (since: string) => Date.parse(since) + input.adminWaitMs;
  let error: { code: ErrorCode; message: string } | undefined;
  try {
    if (input.waiting?.for === 'admin') {
      context.df.setCustomStatus(importState(input, 'waiting_for_admin'));
      const check = (yield context.df.callActivity(IMPORT.session, {
        id: input.id,
        ...(input.person ? { person: input.person } : {}),
      })) as SessionCheck | boolean;
      const ready = typeof check === 'boolean' ? check : check.ready;
      const deadline = deadlineOf(input.waiting.since);
      if (ready) input = { ...input, waiting: undefined };
      else if (now() >= deadline)
        error = {
          code: 'admin_wait_expired',
          message: `${input.person ?? 'no admin'}${input.person ? ' did not sign in' : ' signed in'} within ${Math.round(input.adminWaitMs / 60_000)} minutes of the session being lost (${input.waiting.reason})`,
        };
      else {
        yield context.df.createTimer(new Date(Math.min(now() + SESSION_CHECK_MS, deadline)));
        context.df.continueAsNew(input);
        return undefined;
      }
    }
    while (!error) {
      context.df.setCustomStatus(
        importState(input, input.waiting?.for === 'tenant' ? 'waiting_for_tenant' : 'running'),
      );
      const result = (yield context.df.callActivity(IMPORT.apply, {
        id: input.id,
        ...(input.person ? { person: input.person } : {}),
        ...(input.digest ? { digest: input.digest } : {}),
      })) as ApplyResult;
      input = { ...input, counts: result.counts };
      if (result.sessionLost) {
        const waiting = {
          since: context.df.currentUtcDateTime.toISOString(),
          reason: result.sessionLost,
          for: 'admin' as const,
        };
        input = { ...input, waiting };
        context.df.setCustomStatus(importState(input, 'waiting_for_admin'));
        yield context.df.callActivity(IMPORT.waiting, { input });
        yield context.df.createTimer(new Date(Math.min(now() + SESSION_CHECK_MS, deadlineOf(waiting.since))));
        context.df.continueAsNew(input);
        return undefined;
      }
      if (result.tenantUnavailable) {
        // A wait that goes on keeps its start: IMPORTS_ADMIN_WAIT bounds the whole outage, not each retry.
        const earlier = input.waiting?.for === 'tenant' ? input.waiting : undefined;
        const waiting = {
          since: earlier?.since ?? context.df.currentUtcDateTime.toISOString(),
          reason: result.tenantUnavailable,
          for: 'tenant' as const,
          attempts: (earlier?.attempts ?? 0) + 1,
        };
        input = { ...input, waiting };
        const deadline = deadlineOf(waiting.since);
        if (now() >= deadline) {
          error = {
            code: 'tenant_wait_expired',
            message: `the tenant was unavailable for ${Math.round(input.adminWaitMs / 60_000)} minutes (${waiting.reason})`,
          };
          break;
        }
        if (!earlier) yield context.df.callActivity(IMPORT.waiting, { input });
        const nextAttemptAt = new Date(Math.min(now() + tenantRetryMs(waiting.attempts), deadline));
        context.df.setCustomStatus(
          importState(input, 'waiting_for_tenant', {
            waitingForTenant: {
              since: waiting.since,
              until: new Date(deadline).toISOString(),
              reason: waiting.reason,
              action: TENANT_WAITING_ACTION,
              nextAttemptAt: nextAttemptAt.toISOString(),
            },
          }),
        );
        yield context.df.createTimer(nextAttemptAt);
        context.df.continueAsNew(input);
        return undefined;
      }
      input = { ...input, waiting: undefined };
      if (result.counts.pending === 0) break;
      // Another run of the step holds the import (the activity was delivered twice): let it finish its share.
      if (result.superseded) yield context.df.createTimer(new Date(now() + SUPERSEDED_WAIT_MS));
    }
  } catch (err) {
    error = {
      code: 'import_failed',
      message: `the import could not go on: ${(err instanceof Error ? err.message : String(err)).slice(0, 1_000)}`,
    };
  }
  const finishedAt = context.df.currentUtcDateTime.toISOString();
  let state: ImportState;
  try {
    const counts = (yield context.df.callActivity(IMPORT.finish, { input, finishedAt, error })) as Counts;
    input = { ...input, counts, waiting: undefined };
    state = importState(input, error ? 'failed' : 'completed', { finishedAt, ...(error ? { error } : {}) });
  } catch (err) {
    // The summary could not be written: the next sweep (shared/runs/sweep.ts) accounts for the run.
    state = importState({ ...input, waiting: undefined }, 'failed', {
      finishedAt,
      error: error ?? {
        code: 'import_failed',
        message: `the import could not finish: ${(err as Error).message.slice(0, 1_000)}`,
      },
    });
  }
  if (input.callbackUrl) {
    context.df.setCustomStatus({ ...state, callback: { status: 'pending' } });
    try {
      yield context.df.callActivity(IMPORT.notify, { state, callbackUrl: input.callbackUrl });
      state = { ...state, callback: { status: 'delivered' } };
    } catch (err) {
      state = { ...state, callback: { status: 'failed', error: (err as Error).message.slice(0, 500) } };
    }
  }
  context.df.setCustomStatus(state);
  return state;
}
