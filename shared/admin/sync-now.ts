import { createHash } from 'node:crypto';

/**
 * The status page's one script: its *Sync now* button. It posts to POST /api/manage/sync (the page's own admin key
 * rides along in the query, as every admin route takes it) and, when a sync is running (409), waits the time
 * Retry-After names and asks again — for up to half an hour — instead of showing an error; once a sync starts, the
 * page reloads to show it. Everything else on the page works without script: the charts are SVG drawn on the server.
 */
const SCRIPT = `(() => {
  const button = document.getElementById('sync-now');
  const note = document.getElementById('sync-note');
  const url = new URL('sync' + location.search, location.href);
  const PATIENCE_MS = 30 * 60 * 1000;
  let until = 0;
  const done = (text) => { note.textContent = text; button.disabled = false; until = 0; };
  async function start() {
    button.disabled = true;
    let res;
    try {
      res = await fetch(url, { method: 'POST', credentials: 'same-origin' });
    } catch {
      return done('The app did not answer; try again.');
    }
    const body = await res.json().catch(() => ({}));
    if (res.status === 202) {
      note.textContent = 'A sync has started. The page shows it in a moment.';
      setTimeout(() => location.reload(), 2000);
      return;
    }
    if (res.status === 409) {
      const wait = Math.max(1, Number(res.headers.get('retry-after')) || body.retryAfterSeconds || 10);
      if (Date.now() + wait * 1000 > until)
        return done('A sync has been running for half an hour: start one when it has ended.');
      const since = body.running && body.running.since ? ' since ' + body.running.since : '';
      note.textContent = 'A sync is running' + since + '. This one starts when it has ended (asking again in ' + wait + ' s)…';
      setTimeout(start, wait * 1000);
      return;
    }
    done((body.detail || 'The sync did not start (HTTP ' + res.status + ').') + (body.code ? ' (' + body.code + ')' : ''));
  }
  button.addEventListener('click', () => {
    until = Date.now() + PATIENCE_MS;
    note.textContent = '';
    start();
  });
})();`;

/** The script, and the CSP source that allows it and nothing else (no 'unsafe-inline'). */
export const SYNC_NOW_SCRIPT = SCRIPT;
export const SYNC_NOW_HASH = `'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`;

/** The button, its live note, and the script. */
export const syncNowSection = () =>
  `<p><button type="button" id="sync-now">Sync now</button> <span id="sync-note" role="status" aria-live="polite"></span></p>
<noscript><p>Without script, <code>POST /api/manage/sync</code> with the admin key starts a sync.</p></noscript>
<script>${SCRIPT}</script>`;
