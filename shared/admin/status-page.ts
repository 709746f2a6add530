import { pageHead } from './layout';
import { syncNowSection } from './sync-now';
import type { RunSummary } from '../runs/summary';

/**
 * The status page: server-rendered HTML with SVG charts — no front-end build, no CDN, and no script but the *Sync
 * now* button's (./sync-now.ts), so it works offline and reads the same to a screen reader (each chart has a
 * title, a description, and a table with the same numbers). Every run is one mark in each chart (`.run-mark`), and
 * a failed run is marked by shape and text as well as colour.
 */
export interface StatusPart {
  name: string;
  state: 'ok' | 'warn' | 'fail' | 'unknown';
  detail: string;
}

export interface StatusView {
  tenant: string;
  generatedAt: string;
  parts: StatusPart[];
  /** Newest first, as the run history answers. */
  runs: RunSummary[];
  /** Where the admin page is, relative to this page. */
  adminHref: string;
}

const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

const COLOURS = { succeeded: '#2e7d32', failed: '#b71c1c', running: '#8d6e00' } as const;
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

/** An ISO time as the page shows it: `2026-11-23 11:21:50 UTC`. */
export const when = (iso?: string) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '—');
const seconds = (ms?: number) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
const changes = (c: { created: number; updated: number; deleted: number }) =>
  c.created + c.updated + c.deleted;
const total = (r: RunSummary, pick: (c: RunSummary['streams'][string]) => number) =>
  Object.values(r.streams).reduce((n, c) => n + pick(c), 0);

const W = 640;
const H = 180;
const PAD = { left: 48, right: 12, top: 26, bottom: 28 };

function frame(id: string, title: string, desc: string, body: string, yMax: number, yLabel: string) {
  const ticks = [0, 0.5, 1].map((f) => {
    const y = PAD.top + (H - PAD.top - PAD.bottom) * (1 - f);
    return `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y}" y2="${y}" class="grid"/><text x="${PAD.left - 6}" y="${y + 4}" text-anchor="end" class="tick">${esc(fmt(yMax * f))}</text>`;
  });
  return `<figure>
<svg id="${id}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title ${id}-desc" class="chart">
<title id="${id}-title">${esc(title)}</title><desc id="${id}-desc">${esc(desc)}</desc>
${ticks.join('')}
<text x="${PAD.left}" y="${H - 6}" class="tick">oldest</text><text x="${W - PAD.right}" y="${H - 6}" text-anchor="end" class="tick">newest</text>
<text x="4" y="12" class="tick">${esc(yLabel)}</text>
${body}
</svg>
<figcaption>${esc(title)}</figcaption>
</figure>`;
}

function fmt(n: number) {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return n >= 10 || n === 0 ? String(Math.round(n)) : n.toFixed(1);
}

function slots(n: number) {
  const width = (W - PAD.left - PAD.right) / Math.max(n, 1);
  return { width, x: (i: number) => PAD.left + i * width };
}
const yOf = (v: number, max: number) => PAD.top + (H - PAD.top - PAD.bottom) * (1 - (max ? v / max : 0));

function label(r: RunSummary) {
  return `${r.kind} ${r.id}: ${r.outcome}, started ${when(r.startedAt)}, ${seconds(r.durationMs)}, ${total(r, (c) => c.read)} records read, ${total(r, changes)} changes`;
}

/** Runs over time: one bar per run, its height the run's duration, coloured (and, when failed, hatched and crossed). */
function runsChart(runs: RunSummary[]) {
  const max = Math.max(1, ...runs.map((r) => (r.durationMs ?? 0) / 1000));
  const { width, x } = slots(runs.length);
  const bars = runs.map((r, i) => {
    const h = Math.max(3, (H - PAD.top - PAD.bottom) * ((r.durationMs ?? 0) / 1000 / max));
    const y = H - PAD.bottom - h;
    const bx = x(i) + width * 0.15;
    const bw = Math.max(2, width * 0.7);
    const cross =
      r.outcome === 'failed'
        ? `<text x="${bx + bw / 2}" y="${y - 3}" text-anchor="middle" class="failed-mark" aria-hidden="true">✕</text>`
        : '';
    return `<g class="run-mark ${r.outcome}" data-run="${esc(r.id)}" data-outcome="${r.outcome}"><title>${esc(label(r))}</title><rect x="${bx}" y="${y}" width="${bw}" height="${h}" fill="${r.outcome === 'failed' ? 'url(#hatch)' : COLOURS[r.outcome]}" stroke="${COLOURS[r.outcome]}"/>${cross}</g>`;
  });
  const defs = `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde7e9"/><line x1="0" y1="0" x2="0" y2="6" stroke="${COLOURS.failed}" stroke-width="3"/></pattern></defs>`;
  return frame(
    'chart-runs',
    'Runs over time, by outcome',
    'One bar per run, oldest on the left; its height is the run’s duration in seconds. Green: succeeded; hatched red with a cross: failed; amber: running.',
    defs + bars.join(''),
    max,
    'seconds',
  );
}

/** Records and changes per stream per run: a stacked bar of changes per stream, and a dot for records read. */
function streamsChart(runs: RunSummary[], streams: string[]) {
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
      const c = r.streams[s];
      if (!c || !changes(c)) return '';
      const y0 = yOf(acc, max);
      acc += changes(c);
      const y1 = yOf(acc, max);
      return `<rect x="${bx}" y="${y1}" width="${bw}" height="${Math.max(1, y0 - y1)}" fill="${STREAM_COLOURS[k % STREAM_COLOURS.length]}"><title>${esc(`${s}: ${c.read} read, ${c.created} created, ${c.updated} updated, ${c.deleted} deleted`)}</title></rect>`;
    });
    const read = total(r, (c) => c.read);
    return `<g class="run-mark" data-run="${esc(r.id)}"><title>${esc(label(r))}</title>${segments.join('')}<circle cx="${bx + bw / 2}" cy="${yOf(read, max)}" r="3.5" class="read-dot"/></g>`;
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

/** Duration trend: a line through one point per run. */
function durationChart(runs: RunSummary[]) {
  const max = Math.max(1, ...runs.map((r) => (r.durationMs ?? 0) / 1000));
  const { width, x } = slots(runs.length);
  const pts = runs.map((r, i) => [x(i) + width / 2, yOf((r.durationMs ?? 0) / 1000, max)] as const);
  const line =
    pts.length > 1 ? `<polyline points="${pts.map((p) => p.join(',')).join(' ')}" class="trend"/>` : '';
  const dots = runs.map(
    (r, i) =>
      `<g class="run-mark ${r.outcome}" data-run="${esc(r.id)}"><title>${esc(label(r))}</title><circle cx="${pts[i][0]}" cy="${pts[i][1]}" r="4" fill="${COLOURS[r.outcome]}"/></g>`,
  );
  return frame(
    'chart-duration',
    'Run duration trend',
    'One point per run, oldest on the left: how long each run took, in seconds.',
    line + dots.join(''),
    max,
    'seconds',
  );
}

/** What the run found about the tenant's schema (docs/sync.md, "When the schema changes"). */
function schemaNotes(r: RunSummary): string {
  const notes = [
    ...Object.entries(r.schema?.added ?? {}).map(
      ([stream, fields]) =>
        `<li><strong>${esc(stream)}</strong>: the tenant has fields this stream does not read — ${esc(fields.join(', '))} (\`tenant-integrations discover\` proposes them; SYNC_SCHEMA_CHANGES=propagate takes them)</li>`,
    ),
    ...(r.schema?.changes ?? []).map(
      (c) =>
        `<li><strong>${esc(c.stream)}</strong>: adopted the tenant's schema changes${c.added.length ? ` — now reads ${esc(c.added.join(', '))}` : ''}${c.removed.length ? ` — no longer reads ${esc(c.removed.join(', '))}` : ''}</li>`,
    ),
    ...(r.schema?.introspection === false
      ? [
          '<li>The tenant did not let the run read its schema: drift shows only as a stream’s first-page errors.</li>',
        ]
      : []),
  ];
  return notes.length ? `<p>The tenant’s schema:</p><ul class="schema">${notes.join('')}</ul>` : '';
}

/** An import's items: counts, a wait for an admin (and what ends it), the first failures by the caller's key. */
function importNotes(r: RunSummary): string {
  const i = r.items;
  if (!i) return '';
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

function detail(r: RunSummary) {
  if (r.kind === 'import') {
    const error = r.error
      ? `<p class="error" role="note"><strong>${esc(r.error.code)}</strong>: ${esc(r.error.message)}</p>${r.error.action ? `<p><strong>What fixes it:</strong> ${esc(r.error.action)}</p>` : ''}`
      : '';
    return `<details class="run-detail" data-run="${esc(r.id)}"${r.items?.waitingForAdmin || r.items?.waitingForTenant ? ' open' : ''}><summary>Details of import ${esc(r.id)}</summary>
${error}${importNotes(r)}
</details>`;
  }
  const rows = Object.entries(r.streams)
    .map(
      ([s, c]) =>
        `<tr><th scope="row">${esc(s)}</th><td>${c.pass ?? ''}</td><td>${c.read}</td><td>${c.created}</td><td>${c.updated}</td><td>${c.deleted}</td><td>${seconds(c.durationMs)}</td><td>${c.ok ? 'ok' : `<span class="error">failed</span>${c.error ? `: ${esc(c.error)}` : ''}`}${c.rejected ? ` — <strong>${c.rejected} set aside</strong> (SYNC_REJECTED_RECORDS=quarantine)` : ''}${c.pageSize ? ` — page size lowered to ${c.pageSize.size}: ${esc(c.pageSize.limit)}` : ''}${c.orderNotKept ? ' — not listed newest first as asked: read to the end, the next pass reads it whole' : ''}</td></tr>`,
    )
    .join('');
  const error = r.error
    ? `<p class="error" role="note"><strong>${esc(r.error.code)}</strong>: ${esc(r.error.message)}</p>${r.error.action ? `<p><strong>What fixes it:</strong> ${esc(r.error.action)}</p>` : ''}`
    : '';
  const earlier = r.interruptions?.length
    ? `<p>Resumed after it stopped ${r.interruptions.length === 1 ? 'once' : `${r.interruptions.length} times`}:</p><ul class="interruptions">${r.interruptions
        .map((i) => `<li>${esc(when(i.at))} — <strong>${esc(i.code)}</strong>: ${esc(i.message)}</li>`)
        .join('')}</ul>`
    : '';
  return `<details class="run-detail" data-run="${esc(r.id)}"><summary>Details of ${esc(r.kind)} run ${esc(r.id)}</summary>
${error}${earlier}${schemaNotes(r)}
<table><caption>Per stream</caption><thead><tr><th scope="col">stream</th><th scope="col">pass</th><th scope="col">read</th><th scope="col">created</th><th scope="col">updated</th><th scope="col">deleted</th><th scope="col">time</th><th scope="col">outcome</th></tr></thead><tbody>${rows || '<tr><td colspan="8">no stream has reported yet</td></tr>'}</tbody></table>
${r.sinks ? `<p>Sinks: ${esc(r.sinks)}</p>` : ''}
</details>`;
}

export function statusPage(view: StatusView): string {
  const chronological = [...view.runs].reverse();
  const streams = [...new Set(chronological.flatMap((r) => Object.keys(r.streams)))];
  const syncs = chronological.filter((r) => r.kind === 'sync');
  const parts = view.parts
    .map(
      (p) =>
        `<li class="part ${p.state}"><span class="badge">${p.state === 'ok' ? '✓ ok' : p.state === 'warn' ? '! warn' : p.state === 'fail' ? '✕ fail' : '? unknown'}</span> <strong>${esc(p.name)}</strong>: ${esc(p.detail)}</li>`,
    )
    .join('');
  // Each run is two rows: its numbers, then its details across the whole width (keeps the table narrow).
  const table = view.runs
    .map(
      (r) => `<tr class="run-row ${r.outcome}" data-run="${esc(r.id)}">
<td>${esc(when(r.startedAt))}</td><td>${esc(r.kind)}</td><td>${esc(r.trigger)}</td>
<td><span class="outcome ${r.outcome}">${r.outcome === 'failed' ? '✕ failed' : r.outcome === 'succeeded' ? '✓ succeeded' : '… running'}</span></td>
<td>${seconds(r.durationMs)}</td><td>${total(r, (c) => c.read)}</td><td>${total(r, changes)}</td></tr>
<tr class="detail-row ${r.outcome}"><td colspan="7">${detail(r)}</td></tr>`,
    )
    .join('\n');
  return `${pageHead('Tenant integrations — status', {
    maxWidthRem: 64,
    css: `  ul.parts { list-style: none; padding: 0; margin: 0; display: grid; gap: .4rem; }
  .badge { display: inline-block; min-width: 5.5rem; font-weight: 700; }
  .part.ok .badge { color: #1b5e20; } .part.warn .badge { color: #7a4f00; } .part.fail .badge { color: #8a1c24; } .part.unknown .badge { color: #4a5361; }
  figure { margin: 0 0 1rem; } figcaption { font-size: .9rem; color: #4a5361; }
  .chart { width: 100%; height: auto; background: #fff; }
  .chart .grid { stroke: #e3e7ec; } .chart .tick { font-size: 11px; fill: #4a5361; }
  .chart .trend { fill: none; stroke: #1f3a5f; stroke-width: 2; } .chart .read-dot { fill: #1b1f24; }
  .chart .failed-mark { fill: #8a1c24; font-size: 13px; font-weight: 700; }
  .legend { font-size: .9rem; } .key { margin-right: .8rem; white-space: nowrap; }
  .swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .25rem; vertical-align: -1px; }
  .swatch.dot { background: #1b1f24; border-radius: 50%; }
  table { border-collapse: collapse; width: 100%; font-size: .95rem; }
  th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #e3e7ec; vertical-align: top; }
  tr.run-row.failed, tr.detail-row.failed { background: #fdeef0; }
  tr.run-row td { border-bottom: none; } tr.detail-row td { padding-top: 0; }
  .run-detail table { margin: .5rem 0; } .sr { text-align: left; font-size: .9rem; color: #4a5361; }
  .outcome.failed, .error { color: #8a1c24; font-weight: 700; } .outcome.succeeded { color: #1b5e20; font-weight: 600; }
  details summary { cursor: pointer; color: #0b4f9c; }
`,
  })}
<body>
<header><h1>Tenant integrations — status${view.tenant ? ` (${esc(view.tenant)})` : ''}</h1><a href="${esc(view.adminHref)}">Admin page</a></header>
<main>
<section aria-labelledby="parts-heading"><h2 id="parts-heading">At a glance</h2><ul class="parts">${parts}</ul>
<p><small>As of ${esc(when(view.generatedAt))}. Reload for newer runs.</small></p></section>
<section aria-labelledby="charts-heading"><h2 id="charts-heading">Runs</h2>
${syncNowSection()}
${view.runs.length ? `${runsChart(chronological)}${streamsChart(syncs.length ? syncs : chronological, streams)}${durationChart(chronological)}` : '<p>No runs yet. The timer starts one on its schedule; <code>POST /api/manage/sync</code> starts one now.</p>'}
</section>
<section aria-labelledby="table-heading"><h2 id="table-heading">Recent runs</h2>
<table><caption class="sr">Newest first; open a run’s details for its streams and, when it failed, the action that fixes it.</caption>
<thead><tr><th scope="col">started</th><th scope="col">kind</th><th scope="col">trigger</th><th scope="col">outcome</th><th scope="col">time</th><th scope="col">records</th><th scope="col">changes</th></tr></thead>
<tbody>${table}</tbody></table></section>
</main>
</body>
</html>`;
}
