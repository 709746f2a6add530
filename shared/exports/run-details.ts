/*
 * An export's own part of its summary, as the export's kind of run declares it (shared/runs/kind.ts): the records of
 * each stream it wrote, and where — what the run history keeps, and how the status page shows it.
 */
import { z } from 'zod';
import { bounded } from '../errors';
import type { RunDetails } from '../runs/kind';
import { esc, lastRunPart } from '../runs/page';
import type { RunSummary } from '../runs/summary';

const streamSchema = z.looseObject({
  read: z.number().int().min(0),
  ok: z.boolean(),
  error: z.string().optional(),
});

export const exportDetailsSchema = z.object({
  streams: z.record(z.string(), streamSchema).default({}),
  /** The files' format and where they went. */
  sinks: z.string().optional(),
});
export type ExportDetails = z.infer<typeof exportDetailsSchema>;

const details = (r: RunSummary): ExportDetails => {
  const parsed = exportDetailsSchema.safeParse(r);
  return parsed.success ? parsed.data : { streams: {} };
};

export const EXPORT_RUN_DETAILS: RunDetails = {
  schema: exportDetailsSchema,
  bound: (d, hard) => {
    const { streams = {} } = d as ExportDetails;
    return {
      ...d,
      streams: Object.fromEntries(
        Object.entries(streams).map(([s, c]) => [
          s,
          hard ? { ...c, error: undefined } : c.error ? { ...c, error: bounded(c.error, 500) } : c,
        ]),
      ),
    };
  },
  counts: (r) => ({ read: Object.values(details(r).streams).reduce((n, c) => n + c.read, 0), changes: 0 }),
  html: (r) => {
    const d = details(r);
    const rows = Object.entries(d.streams)
      .map(
        ([s, c]) =>
          `<tr><th scope="row">${esc(s)}</th><td>${c.read}</td><td>${c.ok ? 'ok' : `<span class="error">failed</span>${c.error ? `: ${esc(c.error)}` : ''}`}</td></tr>`,
      )
      .join('');
    return `<table><caption>Per stream</caption><thead><tr><th scope="col">stream</th><th scope="col">records</th><th scope="col">outcome</th></tr></thead><tbody>${rows || '<tr><td colspan="3">no stream has reported yet</td></tr>'}</tbody></table>${d.sinks ? `<p>Files: ${esc(d.sinks)}</p>` : ''}`;
  },
  glance: (runs) => [lastRunPart('Last export', runs[0], 'no export yet')],
};
