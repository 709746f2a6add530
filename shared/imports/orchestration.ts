import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import { EXPORT_ID } from '../exports/request';
import type { ApplyResult, Counts } from './apply';

export const IMPORT = {
  orchestrator: 'importRun',
  apply: 'importApply',
  session: 'importSession',
  waiting: 'importWaiting',
  finish: 'importFinish',
  notify: 'importNotify',
} as const;

export const importInstanceId = (id: string) => `import-${id}`;
export const IMPORT_ID = EXPORT_ID;

/** How often an import waiting for an admin looks at the session again. */
export const SESSION_CHECK_MS = 60_000;

const countsSchema = z.object({
  applied: z.number().int(),
  failed: z.number().int(),
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
  callbackUrl: z.string().optional(),
  /** Set while the import waits for an admin (it continues as new every check). */
  waiting: z.object({ since: z.string(), reason: z.string() }).optional(),
  counts: countsSchema.optional(),
});
export type ImportInput = z.infer<typeof importInputSchema>;

export const IMPORT_STATES = ['queued', 'running', 'waiting_for_admin', 'completed', 'failed'] as const;

/** An import as GET /api/imports/{id} shows it (without the per-item results, read from the store). */
export const importStateSchema = z.object({
  id: z.string(),
  operation: z.string(),
  state: z.enum(IMPORT_STATES),
  requestedAt: z.string(),
  finishedAt: z.string().optional(),
  total: z.number().int(),
  counts: countsSchema,
  waitingForAdmin: z
    .object({ since: z.string(), until: z.string(), reason: z.string(), action: z.string() })
    .optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  callback: z
    .object({ status: z.enum(['pending', 'delivered', 'failed']), error: z.string().optional() })
    .optional(),
});
export type ImportState = z.infer<typeof importStateSchema>;

export const noneDone = (total: number): Counts => ({ applied: 0, failed: 0, skipped: 0, pending: total });

export const WAITING_ACTION =
  'An admin must sign in on the admin page (/api/manage) or with `tenant-integrations login`; the import resumes within a minute.';

export function importState(
  input: ImportInput,
  state: ImportState['state'],
  extra: Partial<ImportState> = {},
): ImportState {
  return {
    id: input.id,
    operation: input.operation,
    state,
    requestedAt: input.requestedAt,
    total: input.total,
    counts: input.counts ?? noneDone(input.total),
    ...(input.waiting && state === 'waiting_for_admin'
      ? {
          waitingForAdmin: {
            since: input.waiting.since,
            until: new Date(Date.parse(input.waiting.since) + input.adminWaitMs).toISOString(),
            reason: input.waiting.reason,
            action: WAITING_ACTION,
          },
        }
      : {}),
    ...extra,
  };
}

/**
 * One import: its items applied by activities (each a share, resumable by the per-item ledger) with the admin's
 * session. A lost session pauses it — waiting_for_admin, checked each minute (continue-as-new keeps the history
 * short) — until an admin signs in or IMPORTS_ADMIN_WAIT passes. Then the summary, then the signed callback.
 * Deterministic: time only from the context.
 */
export function* importOrchestrator(
  context: OrchestrationContext,
): Generator<Task, ImportState | undefined, unknown> {
  let input = importInputSchema.parse(context.df.getInput());
  const now = () => context.df.currentUtcDateTime.getTime();
  let error: { code: string; message: string } | undefined;
  try {
    if (input.waiting) {
      context.df.setCustomStatus(importState(input, 'waiting_for_admin'));
      const connected = (yield context.df.callActivity(IMPORT.session, { id: input.id })) as boolean;
      const deadline = Date.parse(input.waiting.since) + input.adminWaitMs;
      if (connected) input = { ...input, waiting: undefined };
      else if (now() >= deadline)
        error = {
          code: 'admin_wait_expired',
          message: `no admin signed in within ${Math.round(input.adminWaitMs / 60_000)} minutes of the session being lost (${input.waiting.reason})`,
        };
      else {
        yield context.df.createTimer(new Date(Math.min(now() + SESSION_CHECK_MS, deadline)));
        context.df.continueAsNew(input);
        return undefined;
      }
    }
    while (!error) {
      context.df.setCustomStatus(importState(input, 'running'));
      const result = (yield context.df.callActivity(IMPORT.apply, { id: input.id })) as ApplyResult;
      input = { ...input, counts: result.counts };
      if (result.sessionLost) {
        const waiting = { since: context.df.currentUtcDateTime.toISOString(), reason: result.sessionLost };
        input = { ...input, waiting };
        context.df.setCustomStatus(importState(input, 'waiting_for_admin'));
        yield context.df.callActivity(IMPORT.waiting, { input });
        yield context.df.createTimer(
          new Date(Math.min(now() + SESSION_CHECK_MS, Date.parse(waiting.since) + input.adminWaitMs)),
        );
        context.df.continueAsNew(input);
        return undefined;
      }
      if (result.counts.pending === 0) break;
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
    input = { ...input, counts };
    state = importState(input, error ? 'failed' : 'completed', { finishedAt, ...(error ? { error } : {}) });
  } catch (err) {
    // The summary could not be written: the next sweep (shared/runs/sweep.ts) accounts for the run.
    state = importState(input, 'failed', {
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
