/*
 * The status page's vocabulary, for the page (shared/admin/status-page.ts) and for the run kinds that show their
 * details and charts on it (each kind's `details`, ./kind.ts): HTML escaping, times and durations as shown, the SVG
 * chart frame every chart is drawn in, and a part of the page's "at a glance".
 */

/** One line of the page's "at a glance": a part of the app, its state, and what it found. */
export interface StatusPart {
  name: string;
  state: 'ok' | 'warn' | 'fail' | 'unknown';
  detail: string;
}

export const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/** An ISO time as the page shows it: `2026-11-23 11:21:50 UTC`. */
export const when = (iso?: string) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : '—');
export const seconds = (ms?: number) =>
  ms === undefined ? '—' : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

export const COLOURS = { succeeded: '#2e7d32', failed: '#b71c1c', running: '#8d6e00' } as const;

export const W = 640;
export const H = 180;
export const PAD = { left: 48, right: 12, top: 26, bottom: 28 };

export function fmt(n: number) {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return n >= 10 || n === 0 ? String(Math.round(n)) : n.toFixed(1);
}

/** A chart: its SVG with a title and description a screen reader reads, its y scale, and its caption. */
export function frame(id: string, title: string, desc: string, body: string, yMax: number, yLabel: string) {
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

/** `n` runs side by side: each one's width, and where the i-th starts. */
export function slots(n: number) {
  const width = (W - PAD.left - PAD.right) / Math.max(n, 1);
  return { width, x: (i: number) => PAD.left + i * width };
}
export const yOf = (v: number, max: number) =>
  PAD.top + (H - PAD.top - PAD.bottom) * (1 - (max ? v / max : 0));

/** A kind's last run, as "at a glance" says it: running, succeeded, or failed with the action that fixes it. */
export function lastRunPart(
  name: string,
  run:
    | {
        outcome: string;
        startedAt: string;
        finishedAt?: string;
        error?: { message: string; action?: string };
      }
    | undefined,
  none: string,
): StatusPart {
  if (!run) return { name, state: 'unknown', detail: none };
  if (run.outcome === 'running') return { name, state: 'ok', detail: `running since ${when(run.startedAt)}` };
  if (run.outcome === 'succeeded')
    return { name, state: 'ok', detail: `succeeded, finished ${when(run.finishedAt ?? run.startedAt)}` };
  return {
    name,
    state: 'fail',
    detail: `failed at ${when(run.finishedAt ?? run.startedAt)}: ${run.error?.message ?? 'see its details'}${run.error?.action ? ` — ${run.error.action}` : ''}`,
  };
}

/** A run's error as its details show it: the code, the message, and the action that fixes it. */
export const errorBlock = (e: { code: string; message: string; action?: string } | undefined) =>
  e
    ? `<p class="error" role="note"><strong>${esc(e.code)}</strong>: ${esc(e.message)}</p>${e.action ? `<p><strong>What fixes it:</strong> ${esc(e.action)}</p>` : ''}`
    : '';
