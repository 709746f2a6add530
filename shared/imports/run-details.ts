/*
 * An import's own part of its summary, as the import's kind of run declares it (shared/runs/kind.ts): its operation,
 * each item's end, the first failures, a wait for an admin or the tenant — what the run history keeps, and how the
 * status page shows it (a waiting import opens its details and is said at a glance).
 */
import { z } from 'zod';
import { errorCodeSchema } from '../errors/code-schema';
import type { RunDetails } from '../runs/kind';
import { esc, lastRunPart, when } from '../runs/page';
import type { RunSummary } from '../runs/summary';

/** The outcome of a run that applies items one by one (a write-back): its operation and each item's end. */
export const itemsSectionSchema = z.object({
  operation: z.string(),
  total: z.number().int(),
  applied: z.number().int(),
  failed: z.number().int(),
  /** Sent, answer lost (absent in summaries written before the state existed). */
  outcome_unknown: z.number().int().optional(),
  skipped: z.number().int(),
  pending: z.number().int(),
  /** The admin whose session applies them. */
  person: z.string().optional(),
  failures: z
    .array(z.object({ key: z.string(), code: errorCodeSchema.optional(), message: z.string() }))
    .max(20),
  waitingForAdmin: z.object({ since: z.string(), reason: z.string() }).optional(),
  waitingForTenant: z.object({ since: z.string(), reason: z.string() }).optional(),
});
export type ItemsSection = z.infer<typeof itemsSectionSchema>;

/**
 * Summaries stored before 2026-11-28 keep the items under the name of the run kind (`import`): read as `items`.
 */
export const importDetailsSchema = z.preprocess(
  (v) => {
    if (!v || typeof v !== 'object' || !('import' in v) || 'items' in v) return v;
    return { ...(v as Record<string, unknown>), items: (v as Record<string, unknown>).import };
  },
  z.object({ items: itemsSectionSchema.optional() }),
);
export type ImportDetails = z.infer<typeof importDetailsSchema>;

const itemsOf = (r: RunSummary): ItemsSection | undefined => {
  const parsed = importDetailsSchema.safeParse(r);
  return parsed.success ? parsed.data.items : undefined;
};

/** An import's items: counts, a wait for an admin (and what ends it), the first failures by the caller's key. */
function importNotes(i: ItemsSection): string {
  const waiting = i.waitingForAdmin
    ? `<p class="error" role="note"><strong>Waiting for an admin</strong>${i.person ? ` (${esc(i.person)})` : ''} since ${esc(when(i.waitingForAdmin.since))}: ${esc(i.waitingForAdmin.reason)}. ${i.person ? `${esc(i.person)} must sign in` : 'Sign in'} again on the admin page; the import resumes within a minute.</p>`
    : i.waitingForTenant
      ? `<p class="error" role="note"><strong>Waiting for the tenant</strong> since ${esc(when(i.waitingForTenant.since))}: ${esc(i.waitingForTenant.reason)}. The items not sent are sent when it answers again.</p>`
      : '';
  const unknown = i.outcome_unknown
    ? `, <strong>${i.outcome_unknown} of unknown outcome</strong> (sent, answer lost: check them at the tenant)`
    : '';
  const failures = i.failures.length
    ? `<table><caption>Items that failed or whose outcome is unknown (first ${i.failures.length})</caption><thead><tr><th scope="col">key</th><th scope="col">code</th><th scope="col">the tenant's message</th></tr></thead><tbody>${i.failures
        .map(
          (f) =>
            `<tr><th scope="row">${esc(f.key)}</th><td>${esc(f.code ?? '')}</td><td>${esc(f.message)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  return `<p>Operation <strong>${esc(i.operation)}</strong>: ${i.applied} of ${i.total} items applied, ${i.failed} failed${unknown}, ${i.skipped} skipped, ${i.pending} pending.</p>${waiting}${failures}`;
}

export const IMPORT_RUN_DETAILS: RunDetails = {
  schema: importDetailsSchema as unknown as RunDetails['schema'],
  html: (r) => {
    const i = itemsOf(r);
    return i ? importNotes(i) : '';
  },
  open: (r) => Boolean(itemsOf(r)?.waitingForAdmin || itemsOf(r)?.waitingForTenant),
  glance: (runs) => {
    const last = runs[0];
    const i = last && itemsOf(last);
    if (i?.waitingForAdmin && last.outcome === 'running')
      return [
        {
          name: 'Import',
          state: 'fail',
          detail: `import ${last.id} waits for ${i.person ?? 'an admin'} to sign in again (the admin page); it resumes within a minute of that`,
        },
      ];
    if (i?.waitingForTenant && last.outcome === 'running')
      return [
        {
          name: 'Import',
          state: 'warn',
          detail: `import ${last.id} waits for the tenant to answer again (${i.waitingForTenant.reason}); its items not sent go then`,
        },
      ];
    return [lastRunPart('Last import', last, 'no import yet')];
  },
};
