import type { RunKinds } from '../runs/kind';
import {
  COLOURS,
  errorBlock,
  esc,
  frame,
  seconds,
  slots,
  when,
  yOf,
  H,
  PAD,
  type StatusPart,
} from '../runs/page';
import type { RunSummary } from '../runs/summary';
import { pageHead } from './layout';
import { syncNowSection, SYNC_NOW_HASH } from './sync-now';

/**
 * The status page: server-rendered HTML with SVG charts — no front-end build, no CDN, and no script but the *Sync
 * now* button's (./sync-now.ts), so it works offline and reads the same to a screen reader (each chart has a
 * title, a description, and a table with the same numbers). Every run is one mark in each chart (`.run-mark`), and
 * a failed run is marked by shape and text as well as colour. What a run did beyond its outcome, time and error —
 * its kind's details, charts and "at a glance" — each kind of run brings (shared/runs/kind.ts): nothing here names one.
 */
export type { StatusPart } from '../runs/page';
export { when } from '../runs/page';

/** The status page's Content-Security-Policy: its styles, the one script, requests to its own origin only. */
export const STATUS_PAGE_CSP = `default-src 'none'; style-src 'unsafe-inline'; script-src ${SYNC_NOW_HASH}; connect-src 'self'; frame-ancestors 'none'`;

export interface StatusView {
  tenant: string;
  generatedAt: string;
  parts: StatusPart[];
  /** Newest first, as the run history answers. */
  runs: RunSummary[];
  /** The kinds of run, which show their runs' details and charts. */
  kinds: RunKinds;
  /** Where the admin page is, relative to this page. */
  adminHref: string;
}

const countsOf = (kinds: RunKinds, r: RunSummary) => kinds[r.kind]?.details?.counts?.(r);

function label(kinds: RunKinds, r: RunSummary) {
  const c = countsOf(kinds, r);
  return `${r.kind} ${r.id}: ${r.outcome}, started ${when(r.startedAt)}, ${seconds(r.durationMs)}${c ? `, ${c.read} records read, ${c.changes} changes` : ''}`;
}

/** Runs over time: one bar per run, its height the run's duration, coloured (and, when failed, hatched and crossed). */
function runsChart(runs: RunSummary[], kinds: RunKinds) {
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
    return `<g class="run-mark ${r.outcome}" data-run="${esc(r.id)}" data-outcome="${r.outcome}"><title>${esc(label(kinds, r))}</title><rect x="${bx}" y="${y}" width="${bw}" height="${h}" fill="${r.outcome === 'failed' ? 'url(#hatch)' : COLOURS[r.outcome]}" stroke="${COLOURS[r.outcome]}"/>${cross}</g>`;
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

/** Duration trend: a line through one point per run. */
function durationChart(runs: RunSummary[], kinds: RunKinds) {
  const max = Math.max(1, ...runs.map((r) => (r.durationMs ?? 0) / 1000));
  const { width, x } = slots(runs.length);
  const pts = runs.map((r, i) => [x(i) + width / 2, yOf((r.durationMs ?? 0) / 1000, max)] as const);
  const line =
    pts.length > 1 ? `<polyline points="${pts.map((p) => p.join(',')).join(' ')}" class="trend"/>` : '';
  const dots = runs.map(
    (r, i) =>
      `<g class="run-mark ${r.outcome}" data-run="${esc(r.id)}"><title>${esc(label(kinds, r))}</title><circle cx="${pts[i][0]}" cy="${pts[i][1]}" r="4" fill="${COLOURS[r.outcome]}"/></g>`,
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

/** A run's details: its error and the action that fixes it, its earlier stops, and what its kind shows of it. */
function detail(kinds: RunKinds, r: RunSummary) {
  const own = kinds[r.kind]?.details;
  const earlier = r.interruptions?.length
    ? `<p>Resumed after it stopped ${r.interruptions.length === 1 ? 'once' : `${r.interruptions.length} times`}:</p><ul class="interruptions">${r.interruptions
        .map((i) => `<li>${esc(when(i.at))} — <strong>${esc(i.code)}</strong>: ${esc(i.message)}</li>`)
        .join('')}</ul>`
    : '';
  return `<details class="run-detail" data-run="${esc(r.id)}"${own?.open?.(r) ? ' open' : ''}><summary>Details of ${esc(r.kind)} run ${esc(r.id)}</summary>
${errorBlock(r.error)}${earlier}${own?.html?.(r) ?? ''}
</details>`;
}

export function statusPage(view: StatusView): string {
  const { kinds } = view;
  const chronological = [...view.runs].reverse();
  // Each kind's own charts, from its runs.
  const kindCharts = Object.values(kinds)
    .map((k) => {
      const own = chronological.filter((r) => r.kind === k.kind);
      return own.length && k.details?.charts ? k.details.charts(own) : '';
    })
    .join('');
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
<td>${seconds(r.durationMs)}</td><td>${countsOf(kinds, r)?.read ?? '—'}</td><td>${countsOf(kinds, r)?.changes ?? '—'}</td></tr>
<tr class="detail-row ${r.outcome}"><td colspan="7">${detail(kinds, r)}</td></tr>`,
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
${view.runs.length ? `${runsChart(chronological, kinds)}${kindCharts}${durationChart(chronological, kinds)}` : '<p>No runs yet. The timer starts one on its schedule; <code>POST /api/manage/sync</code> starts one now.</p>'}
</section>
<section aria-labelledby="table-heading"><h2 id="table-heading">Recent runs</h2>
<table><caption class="sr">Newest first; open a run’s details for what it did and, when it failed, the action that fixes it.</caption>
<thead><tr><th scope="col">started</th><th scope="col">kind</th><th scope="col">trigger</th><th scope="col">outcome</th><th scope="col">time</th><th scope="col">records</th><th scope="col">changes</th></tr></thead>
<tbody>${table}</tbody></table></section>
</main>
</body>
</html>`;
}
