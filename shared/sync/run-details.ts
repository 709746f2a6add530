/*
 * A sync run's own part of its summary, as the sync's kind of run declares it (shared/runs/kind.ts): its streams'
 * counts and passes, what it found of the tenant's schema, its sinks, the token requests it made — what the run
 * history keeps of them, how they are bounded to fit, and how the status page shows them (a table per run, a chart of
 * changes per stream, the credential, the last sync and the next).
 */
import { z } from 'zod';
import { streamCountsSchema } from '../changes';
import type { AppConfig } from '../config';
import { bounded } from '../errors';
import { errorCodeSchema } from '../errors/code-schema';
import { nextOccurrence, parseNcrontab } from '../ncrontab';
import type { RunDetails } from '../runs/kind';
import { esc, frame, lastRunPart, seconds, slots, when, yOf, type StatusPart } from '../runs/page';
import type { RunSummary } from '../runs/summary';

/** What a pass found about the tenant's schema (shared/catalog/): fields not synced, changes adopted. */
export const schemaFindingsSchema = z.object({
  added: z.record(z.string(), z.array(z.string())).optional(),
  changes: z
    .array(z.object({ stream: z.string(), added: z.array(z.string()), removed: z.array(z.string()) }))
    .optional(),
  introspection: z.boolean().optional(),
});

/** A stream's page size lowered because the tenant refused its own (shared/graphql/limits.ts), and which limit. */
export const loweredPageSizeSchema = z.object({ size: z.number().int().min(1), limit: z.string().max(200) });
export type LoweredPageSize = z.infer<typeof loweredPageSizeSchema>;

const streamSchema = streamCountsSchema.extend({
  ok: z.boolean(),
  durationMs: z.number().int().min(0).optional(),
  error: z.string().optional(),
  errorCode: errorCodeSchema.optional(),
  /** A stream's pass: every record read, or only those changed since the last one. */
  pass: z.enum(['full', 'incremental']).optional(),
  pageSize: loweredPageSizeSchema.optional(),
  /** Read newest first, and the tenant did not keep the order: the pass read on; the next is a full one. */
  orderNotKept: z.literal(true).optional(),
});

export const syncDetailsSchema = z.object({
  streams: z.record(z.string(), streamSchema).default({}),
  sinks: z.string().optional(),
  tokenRequests: z.number().int().min(0).optional(),
  /** The run's view of the tenant's schema: fields it has that a stream does not read; changes adopted. */
  schema: schemaFindingsSchema.optional(),
});
export type SyncDetails = z.infer<typeof syncDetailsSchema>;
export type SyncRunSummary = RunSummary & SyncDetails;

const details = (r: RunSummary): SyncDetails => {
  const parsed = syncDetailsSchema.safeParse(r);
  return parsed.success ? parsed.data : { streams: {} };
};
const changes = (c: { created: number; updated: number; deleted: number }) =>
  c.created + c.updated + c.deleted;
const total = (r: RunSummary, pick: (c: SyncDetails['streams'][string]) => number) =>
  Object.values(details(r).streams).reduce((n, c) => n + pick(c), 0);

const STREAM_COLOURS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
];

/** Records and changes per stream per run: a stacked bar of changes per stream, and a dot for records read. */
function streamsChart(runs: RunSummary[]) {
  const streams = [...new Set(runs.flatMap((r) => Object.keys(details(r).streams)))];
  const max = Math.max(
    1,
    ...runs.map((r) =>
      Math.max(
        total(r, changes),
        total(r, (c) => c.read),
      ),
    ),
  );
  const { width, x } = slots(runs.length);
  const marks = runs.map((r, i) => {
    let acc = 0;
    const bx = x(i) + width * 0.15;
    const bw = Math.max(2, width * 0.7);
    const segments = streams.map((s, k) => {
      const c = details(r).streams[s];
      if (!c || !changes(c)) return '';
      const y0 = yOf(acc, max);
      acc += changes(c);
      const y1 = yOf(acc, max);
      return `<rect x="${bx}" y="${y1}" width="${bw}" height="${Math.max(1, y0 - y1)}" fill="${STREAM_COLOURS[k % STREAM_COLOURS.length]}"><title>${esc(`${s}: ${c.read} read, ${c.created} created, ${c.updated} updated, ${c.deleted} deleted`)}</title></rect>`;
    });
    const read = total(r, (c) => c.read);
    return `<g class="run-mark" data-run="${esc(r.id)}"><title>${esc(`${r.kind} ${r.id}: ${read} records read, ${total(r, changes)} changes`)}</title>${segments.join('')}<circle cx="${bx + bw / 2}" cy="${yOf(read, max)}" r="3.5" class="read-dot"/></g>`;
  });
  const legend = streams
    .map(
      (s, k) =>
        `<span class="key"><span class="swatch" style="background:${STREAM_COLOURS[k % STREAM_COLOURS.length]}"></span>${esc(s)}</span>`,
    )
    .join(' ');
  return (
    frame(
      'chart-streams',
      'Records and changes per stream, per run',
      'One stacked bar per run: the changes (created, updated, deleted) of each stream; the dot is the records read in that run.',
      marks.join(''),
      max,
      'records',
    ) +
    `<p class="legend">Streams: ${legend} <span class="key"><span class="swatch dot"></span>records read</span></p>`
  );
}

/** What the run found about the tenant's schema (docs/sync.md, "When the schema changes"). */
function schemaNotes(d: SyncDetails): string {
  const notes = [
    ...Object.entries(d.schema?.added ?? {}).map(
      ([stream, fields]) =>
        `<li><strong>${esc(stream)}</strong>: the tenant has fields this stream does not read — ${esc(fields.join(', '))} (\`tenant-integrations discover\` proposes them; SYNC_SCHEMA_CHANGES=propagate takes them)</li>`,
    ),
    ...(d.schema?.changes ?? []).map(
      (c) =>
        `<li><strong>${esc(c.stream)}</strong>: adopted the tenant's schema changes${c.added.length ? ` — now reads ${esc(c.added.join(', '))}` : ''}${c.removed.length ? ` — no longer reads ${esc(c.removed.join(', '))}` : ''}</li>`,
    ),
    ...(d.schema?.introspection === false
      ? [
          '<li>The tenant did not let the run read its schema: drift shows only as a stream’s first-page errors.</li>',
        ]
      : []),
  ];
  return notes.length ? `<p>The tenant’s schema:</p><ul class="schema">${notes.join('')}</ul>` : '';
}

/** A table of a run's streams: its pass, counts, time and outcome (and what the stream had to do differently). */
export function streamsTable(streams: SyncDetails['streams']): string {
  const rows = Object.entries(streams)
    .map(
      ([s, c]) =>
        `<tr><th scope="row">${esc(s)}</th><td>${c.pass ?? ''}</td><td>${c.read}</td><td>${c.created}</td><td>${c.updated}</td><td>${c.deleted}</td><td>${seconds(c.durationMs)}</td><td>${c.ok ? 'ok' : `<span class="error">failed</span>${c.error ? `: ${esc(c.error)}` : ''}`}${c.rejected ? ` — <strong>${c.rejected} set aside</strong> (SYNC_REJECTED_RECORDS=quarantine)` : ''}${c.pageSize ? ` — page size lowered to ${c.pageSize.size}: ${esc(c.pageSize.limit)}` : ''}${c.orderNotKept ? ' — not listed newest first as asked: read to the end, the next pass reads it whole' : ''}</td></tr>`,
    )
    .join('');
  return `<table><caption>Per stream</caption><thead><tr><th scope="col">stream</th><th scope="col">pass</th><th scope="col">read</th><th scope="col">created</th><th scope="col">updated</th><th scope="col">deleted</th><th scope="col">time</th><th scope="col">outcome</th></tr></thead><tbody>${rows || '<tr><td colspan="8">no stream has reported yet</td></tr>'}</tbody></table>`;
}

/** The sync's runs at a glance: the credential (as the last sync that used it found it), the last sync, the next. */
function glance(
  runs: RunSummary[],
  context: { config: AppConfig; now: number },
  schedule: string,
): StatusPart[] {
  const rejected = (r: RunSummary | undefined) => r?.error?.code.toLowerCase() === 'credential_rejected';
  const telling = runs.find((r) => r.outcome === 'succeeded' || rejected(r));
  const credential: StatusPart =
    telling?.error && rejected(telling)
      ? { name: 'Credential', state: 'fail', detail: telling.error.action ?? telling.error.message }
      : telling
        ? { name: 'Credential', state: 'ok', detail: `accepted in the sync of ${when(telling.startedAt)}` }
        : {
            name: 'Credential',
            state: 'unknown',
            detail: 'no sync has used it yet (`tenant-integrations doctor` checks it now)',
          };
  let next: StatusPart;
  try {
    const at = nextOccurrence(parseNcrontab(schedule), context.now);
    next = {
      name: 'Next scheduled sync',
      state: 'ok',
      detail: `${when(new Date(at).toISOString())} (${schedule})`,
    };
  } catch {
    next = {
      name: 'Next scheduled sync',
      state: 'fail',
      detail: `SYNC_SCHEDULE "${schedule}" is not a valid NCRONTAB`,
    };
  }
  const last = runs.find((r) => r.outcome !== 'running') ?? runs[0];
  return [credential, lastRunPart('Last sync', last, 'no sync yet'), next];
}

/** The sync's details, as its kind declares them; `schedule` reads SYNC_SCHEDULE. */
export const syncRunDetails = (schedule: (config: AppConfig) => string): RunDetails => ({
  schema: syncDetailsSchema,
  bound: (d, hard) => {
    const { streams = {} } = d as SyncDetails;
    return {
      ...d,
      streams: Object.fromEntries(
        Object.entries(streams).map(([name, c]) => [
          name,
          hard ? { ...c, error: undefined } : c.error ? { ...c, error: bounded(c.error, 500) } : c,
        ]),
      ),
    };
  },
  counts: (r) => ({ read: total(r, (c) => c.read), changes: total(r, changes) }),
  html: (r) => {
    const d = details(r);
    return `${schemaNotes(d)}${streamsTable(d.streams)}${d.sinks ? `<p>Sinks: ${esc(d.sinks)}</p>` : ''}`;
  },
  charts: streamsChart,
  glance: (runs, context) => glance(runs, context, schedule(context.config)),
});
