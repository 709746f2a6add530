import { pageHead } from './layout';

/**
 * The admin page: plain HTML and a small script, no front-end build. The admin key comes from the page's
 * own URL (`?code=`) and goes back only in the `x-functions-key` header of our own API calls.
 */
export const ADMIN_PAGE = `${pageHead('Tenant integrations — admin', {
  maxWidthRem: 52,
  css: `  :root { color-scheme: light; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0; }
  dt { font-weight: 600; }
  dd { margin: 0; }
  button { font-size: 1rem; padding: .55rem 1.1rem; border-radius: 4px; border: 2px solid #1f3a5f; background: #1f3a5f; color: #fff; cursor: pointer; }
  button.secondary { background: #fff; color: #1f3a5f; }
  button:disabled { opacity: .6; cursor: not-allowed; }
  .code { font-family: ui-monospace, monospace; font-size: 3rem; letter-spacing: .15em; font-weight: 700; margin: .5rem 0; }
  .qr svg { width: 12rem; height: 12rem; }
  .login { display: grid; grid-template-columns: 1fr auto; gap: 1rem; align-items: center; }
  .state { display: inline-block; padding: .1rem .6rem; border-radius: 999px; font-weight: 600; background: #e8ecf1; }
  .state.connected, .state.authorised { background: #dff3e4; color: #0b5d1e; }
  .state.login-required, .state.failed, .state.denied, .state.expired { background: #fde7e9; color: #8a1c24; }
  .error { color: #8a1c24; font-weight: 600; }
`,
})}
<body>
<header><h1>Tenant integrations — admin</h1><nav><a id="status-link" href="manage/status">Status page: runs, charts, health</a></nav></header>
<main>
  <section aria-labelledby="session-heading">
    <h2 id="session-heading">Delegated session</h2>
    <p>The admin's login that the app keeps alive for work that needs a person's permissions.</p>
    <dl aria-live="polite" id="session">
      <dt>State</dt><dd><span class="state" id="session-state">loading…</span></dd>
      <dt>Who</dt><dd id="session-who">—</dd>
      <dt>Since</dt><dd id="session-since">—</dd>
      <dt>Last refresh</dt><dd id="session-last">—</dd>
      <dt>Next refresh</dt><dd id="session-next">—</dd>
      <dt>Lets imports run</dt><dd id="session-enables">—</dd>
    </dl>
  </section>
  <section aria-labelledby="login-heading">
    <h2 id="login-heading">Device login</h2>
    <p id="login-intro">Start a login, then open the link on any device and sign in as the admin.</p>
    <p><button type="button" id="start">Start device login</button>
       <button type="button" id="cancel" class="secondary" hidden>Cancel</button></p>
    <div id="login" hidden>
      <div class="login">
        <div>
          <p>Your code:</p>
          <p class="code" id="user-code" aria-label="User code"></p>
          <p>Open <a id="link" href="#" target="_blank" rel="noopener noreferrer"></a> and enter the code, or scan the QR code.</p>
          <p>Time left: <span id="remaining"></span></p>
        </div>
        <div class="qr" id="qr" role="img" aria-label="QR code of the login link"></div>
      </div>
    </div>
    <p role="status" aria-live="polite" id="login-status"></p>
    <p role="alert" class="error" id="error"></p>
  </section>
</main>
<script>
(() => {
  const key = new URLSearchParams(location.search).get('code') || '';
  document.getElementById('status-link').href = 'manage/status?code=' + encodeURIComponent(key);
  const $ = (id) => document.getElementById(id);
  const api = async (path, init = {}) => {
    const res = await fetch('/api/' + path, { ...init, headers: { 'x-functions-key': key, ...(init.headers || {}) } });
    const body = await res.json().catch(() => ({}));
    return { status: res.status, body };
  };
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
  let current = null;
  let poller = null;
  let ticker = null;

  async function loadSession() {
    const { status, body } = await api('manage/session');
    if (status !== 200) { $('session-state').textContent = 'unavailable'; return {}; }
    $('session-state').textContent = body.state === 'none' ? 'not connected' : body.state;
    $('session-state').className = 'state ' + body.state;
    $('session-who').textContent = body.username ? (body.name ? body.name + ' (' + body.username + ')' : body.username) : '—';
    $('session-since').textContent = when(body.connectedAt);
    $('session-last').textContent = when(body.lastRefreshAt);
    $('session-next').textContent = when(body.nextRefreshAt);
    // What a signed-in admin's session lets POST /api/imports do, as that person (docs/security.md).
    $('session-enables').textContent = body.importOperations === null
      ? 'nothing: imports are off until IMPORT_OPERATIONS_FILE names the mutations they may run'
      : Array.isArray(body.importOperations)
        ? body.importOperations.join(', ') + (body.state === 'connected' ? ', with this admin’s permissions' : ' — once an admin signs in')
        : '—';
    return body;
  }

  const MESSAGES = {
    starting: 'Starting…',
    waiting: 'Waiting for you to sign in…',
    authorised: 'Connected.',
    denied: 'The login was denied.',
    expired: 'The code expired before anyone signed in. Start again.',
    cancelled: 'The login was cancelled.',
    failed: 'The login failed.',
  };

  function show(login) {
    current = login;
    const waiting = login.state === 'waiting';
    $('login').hidden = !waiting;
    $('cancel').hidden = !waiting;
    $('start').disabled = waiting || login.state === 'starting';
    $('login-status').textContent = MESSAGES[login.state] + (login.username ? ' Signed in as ' + login.username + '.' : '') + (login.error ? ' ' + login.error : '');
    if (waiting) {
      $('user-code').textContent = login.userCode;
      $('link').href = login.verificationUriComplete;
      $('link').textContent = login.verificationUri;
      $('qr').innerHTML = login.qrSvg || '';
    }
    if (!waiting && login.state !== 'starting') { stop(); loadSession(); }
  }

  function tick() {
    if (!current || !current.expiresAt) return;
    const s = Math.max(0, Math.round((Date.parse(current.expiresAt) - Date.now()) / 1000));
    $('remaining').textContent = Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }

  function stop() { clearInterval(poller); clearInterval(ticker); poller = ticker = null; }

  function follow(login) {
    show(login);
    stop();
    if (login.state !== 'waiting' && login.state !== 'starting') return;
    ticker = setInterval(tick, 1000); tick();
    poller = setInterval(async () => {
      const { status, body } = await api('manage/device-login/' + encodeURIComponent(login.id));
      if (status === 200) show(body);
    }, 1500);
  }

  $('start').addEventListener('click', async () => {
    $('error').textContent = '';
    $('start').disabled = true;
    let res = await api('manage/device-login', { method: 'POST' });
    if (res.status === 409 && confirm('A device login is already running. Replace it?')) res = await api('manage/device-login?force=true', { method: 'POST' });
    if (res.status === 202) follow(res.body);
    else { $('error').textContent = (res.body && res.body.detail) || 'Could not start the login (HTTP ' + res.status + ').'; $('start').disabled = false; }
  });

  $('cancel').addEventListener('click', async () => {
    if (!current) return;
    await api('manage/device-login/' + encodeURIComponent(current.id) + '/cancel', { method: 'POST' });
  });

  // A login started earlier (another tab, a reload) is picked up where it is.
  (async () => {
    const id = (await loadSession()).loginId;
    if (!id) return;
    const { status, body } = await api('manage/device-login/' + encodeURIComponent(id));
    if (status === 200 && (body.state === 'waiting' || body.state === 'starting')) follow(body);
  })();
  setInterval(loadSession, 30000);
})();
</script>
</body>
</html>`;
