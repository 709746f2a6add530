import { z } from 'zod';
import type { Host } from '../feature';
import { IMPORT_PARTS } from './feature';
import { callbackReply } from '../webhooks/reply';
import { countsFrom, importReply, itemResults, type ItemResult } from './reply';
import { importSummary } from './summary';
import { endRunSpan } from '../telemetry';
import { applyBatch, skipRest, type ApplyResult, type Counts } from './apply';
import { IMPORT_RUN, importInputSchema, importStateSchema, type SessionCheck } from './orchestration';
import { batchDigest } from './store';
import { IntegrationError } from '../errors';
import { errorCodeSchema } from '../errors/code-schema';

/**
 * Items one activity applies at most before it reports progress (the orchestration calls it again for the rest);
 * it also hands back after ACTIVITY_SLICE_SECONDS.
 */
export const ACTIVITY_ITEMS = 1_000;

/** Items that need someone's attention: refused, or of unknown outcome (first 20, in the order posted). */
const failuresOf = (results: ItemResult[]) =>
  results
    .filter((r) => r.state === 'failed' || r.state === 'outcome_unknown')
    .slice(0, 20)
    .map((r) => ({ key: r.key, code: r.code, message: r.message ?? 'failed' }));

/*
 * The import orchestration's activities (functions/import-*.ts register them under IMPORT's names). Inputs and
 * outputs are stored in the durable history: ids, names and counts only — never an item, a token or a link.
 */

const idInput = z.object({ id: z.string(), person: z.string().optional(), digest: z.string().optional() });

/**
 * A share of the import's items applied with the session of the admin it was accepted under (any admin's for imports
 * accepted before that was recorded); the counts, and whether the session was lost or the tenant unavailable.
 */
export function importApplyActivity(app: Host, raw: unknown): Promise<ApplyResult> {
  const { id, person, digest } = idInput.parse(raw);
  return app.traced('import apply', { runId: id }, async () => {
    const setup = app.part(IMPORT_PARTS);
    const access = app.access();
    // The document must still be on the allow-list, and the items what was accepted (imports accepted before the
    // digest was kept have none: their document is still checked).
    const batch = await setup.allowed(await setup.store.batch(id));
    if (digest && batchDigest(batch) !== digest)
      throw new IntegrationError(
        'unknown_operation',
        `the stored items of import ${id} are not the ones accepted (the stored batch was altered): nothing of it is sent`,
      );
    return applyBatch(
      id,
      batch,
      setup.store,
      person ? access.delegatedGraphqlAs(person) : access.delegatedGraphql,
      {
        limit: ACTIVITY_ITEMS,
        deadlineMs: app.clock.now() + app.config.activitySliceSeconds * 1000,
        clock: app.clock,
        logger: app.logger,
      },
    );
  });
}

/** Whether the import's admin is signed in again (the waiting import's check), and who is. */
export async function importSessionActivity(app: Host, raw: unknown): Promise<SessionCheck> {
  const { person } = idInput.parse(raw);
  const session = await app.part(IMPORT_PARTS).session();
  const connected = session?.state === 'connected';
  return {
    ready: connected && (!person || session.username === person),
    ...(connected ? { signedIn: session.username } : {}),
  };
}

const inputOnly = z.object({ input: importInputSchema });

/** The import now waits for an admin or for the tenant: the record the alert reads, and the run history says so. */
export async function importWaitingActivity(app: Host, raw: unknown): Promise<void> {
  const { input } = inputOnly.parse(raw);
  const forTenant = input.waiting?.for === 'tenant';
  await app.traced('import waiting', { runId: input.id }, async () => {
    // An alert rule in infra/ reads the admin's record: its message and fields are part of the contract.
    app.logger.log('warn', forTenant ? 'import waiting for tenant' : 'import waiting for admin', {
      runId: input.id,
      tenant: input.tenant,
      code: forTenant ? 'upstream_unavailable' : 'admin_login_required',
    });
    const results = await itemResults(app.part(IMPORT_PARTS).store, input.id);
    const waiting = input.waiting && { since: input.waiting.since, reason: input.waiting.reason };
    await app.runs().save(
      importSummary(input, countsFrom(results), {
        failures: failuresOf(results),
        ...(forTenant ? { waitingForTenant: waiting } : { waitingForAdmin: waiting }),
      }),
    );
  });
}

const finishInput = z.object({
  input: importInputSchema,
  finishedAt: z.string(),
  error: z.object({ code: errorCodeSchema, message: z.string() }).optional(),
});

/** The end: items never sent are skipped (so each has its result), the summary saved, the alert's record. */
export async function importFinishActivity(app: Host, raw: unknown): Promise<Counts> {
  const { input, finishedAt, error } = finishInput.parse(raw);
  return app.traced('import finish', { runId: input.id }, async () => {
    const setup = app.part(IMPORT_PARTS);
    if (error || (input.counts?.pending ?? input.total) > 0)
      await skipRest(input.id, input.total, setup.store, error?.message ?? 'the import ended');
    const results = await itemResults(setup.store, input.id);
    const counts = countsFrom(results);
    const summary = importSummary(input, counts, { finishedAt, failures: failuresOf(results), error });
    if (summary.outcome === 'failed')
      // An alert rule in infra/ reads this record: its message and fields are part of the contract.
      app.logger.log('warn', IMPORT_RUN.failedRecord, {
        runId: input.id,
        tenant: input.tenant,
        code: summary.error?.code,
      });
    else app.logger.log('info', 'import completed', { runId: input.id, applied: counts.applied });
    await app.runs().save(summary);
    // Its items and ledger may go after IMPORTS_RETENTION_DAYS; older ended imports' go now.
    await setup.store.end(input.id, finishedAt);
    await setup.expireEnded();
    endRunSpan(
      IMPORT_RUN.span,
      input.id,
      input.requestedAt,
      { tenant: input.tenant, kind: 'import', outcome: summary.outcome, count: input.total },
      summary.error?.code,
      Date.parse(finishedAt),
    );
    return counts;
  });
}

const notifyInput = z.object({ state: importStateSchema, callbackUrl: z.string() });

/** The signed callback: the status body as GET shows it (every item's result), POSTed the Standard Webhooks way. */
export async function importNotifyActivity(app: Host, raw: unknown): Promise<void> {
  const { state, callbackUrl } = notifyInput.parse(raw);
  await app.traced('import callback', { runId: state.id }, async () => {
    const setup = app.part(IMPORT_PARTS);
    await callbackReply(importReply(setup), state, callbackUrl, {
      secret: setup.callbackSecret,
      clock: setup.clock,
      development: setup.development,
    });
  });
}
