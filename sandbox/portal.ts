import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  escapeHtml,
  html,
  HttpError,
  readForm,
  redirect,
  type Reply,
  type Request,
  type Router,
} from './http';
import type { Credential } from './idp/credentials';
import { authenticatePerson, personById, type Person } from './idp/people';
import { errorLine, field, page } from './pages';
import type { Sandbox } from './state';

const COOKIE = 'sandbox_portal';

interface PortalSession {
  userId: string;
  csrf: string;
}

const fmt = (ms?: number) =>
  ms === undefined ? '—' : new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';

/** Parses the portal's "expiry date" (YYYY-MM-DD): the credential stops working from 00:00 UTC that day. */
export function parseExpiryDate(value: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const ms = Date.parse(`${value}T00:00:00Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The organisation's portal at `{base_url}/{tenant}/`, with Settings → API Credentials for Super Users. */
export function registerPortal(router: Router, sb: Sandbox): void {
  const sessions = new Map<string, PortalSession>();
  const root = () => `/${sb.options.tenant}`;

  const current = (req: Request): { session: PortalSession; person: Person } | undefined => {
    const sid = /(?:^|;\s*)sandbox_portal=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1];
    const session = sid ? sessions.get(sid) : undefined;
    const person = session && personById(session.userId);
    return session && person ? { session, person } : undefined;
  };

  const requireLogin = (req: Request) => {
    const who = current(req);
    if (!who) throw new HttpError(303, '', { location: `${root()}/login` });
    return who;
  };

  const checkCsrf = (form: URLSearchParams, session: PortalSession) => {
    const given = Buffer.from(form.get('csrf') ?? '');
    const expected = Buffer.from(session.csrf);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new HttpError(403, {
        error: 'invalid_request',
        error_description: 'form expired: reload the page',
      });
    }
  };

  const nav = (person?: Person) =>
    `<nav aria-label="Portal"><a href="${root()}/">Home</a> · <a href="${root()}/settings">Settings</a>${
      person
        ? ` · Signed in as ${escapeHtml(person.name)} (${escapeHtml(person.role)}) · <form method="post" action="${root()}/logout" style="display:inline"><button class="secondary" style="margin:0;padding:.1rem .5rem">Sign out</button></form>`
        : ''
    }</nav>`;

  const m2mAllowed = (person: Person) => sb.options.m2mEnabled && person.role === 'Super User';

  function credentialsPage(
    who: { session: PortalSession; person: Person },
    extra: { secret?: { clientId: string; secret: string; verb: string }; error?: string } = {},
  ): Reply {
    const row = (c: Credential) => {
      const status = sb.credentials.status(c);
      const actions =
        status === 'active'
          ? `<form method="post" action="${root()}/settings/api-credentials/${encodeURIComponent(c.clientId)}/rotate"><input type="hidden" name="csrf" value="${who.session.csrf}"><button aria-label="Rotate ${escapeHtml(c.label)}">Rotate</button></form>
<form method="post" action="${root()}/settings/api-credentials/${encodeURIComponent(c.clientId)}/revoke"><input type="hidden" name="csrf" value="${who.session.csrf}"><button class="danger" aria-label="Revoke ${escapeHtml(c.label)}">Revoke</button></form>`
          : '';
      return `<tr><td>${escapeHtml(c.label)}</td><td><code>${escapeHtml(c.clientId)}</code></td><td>${fmt(c.createdAt)}</td><td>${fmt(c.expiresAt)}</td><td>${status}</td><td>${actions}</td></tr>`;
    };
    const secret = extra.secret
      ? `<div class="notice" role="status"><p><strong>Copy this client secret now.</strong> It is shown once and cannot be retrieved later. Keep it in a secret store, not in plain-text configuration.</p>
<p>Client ID: <code>${escapeHtml(extra.secret.clientId)}</code> (${escapeHtml(extra.secret.verb)})</p><code class="secret" id="client-secret">${escapeHtml(extra.secret.secret)}</code></div>`
      : '';
    return html(
      extra.error ? 400 : 200,
      page(
        'API Credentials',
        `${nav(who.person)}<h1>API Credentials</h1>
<p>Machine-to-machine credentials for unattended integrations. They are read-only.</p>
${errorLine(extra.error)}${secret}
<table><caption class="visually-hidden">Credentials</caption><thead><tr><th scope="col">Label</th><th scope="col">Client ID</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
<tbody>${sb.credentials.list().map(row).join('\n')}</tbody></table>
<h2>Create credential</h2>
<form method="post" action="${root()}/settings/api-credentials">
<input type="hidden" name="csrf" value="${who.session.csrf}">
${field('label', 'Label', { required: true })}
${field('expiresOn', 'Expiry date (optional)', { type: 'date' })}
<button type="submit">Create credential</button>
</form>`,
      ),
    );
  }

  const guardCredentials = (req: Request) => {
    sb.realm(req);
    const who = requireLogin(req);
    // Absent, not forbidden, where the organisation has not enabled M2M credentials (docs/service-rules.md#credentials).
    if (!sb.options.m2mEnabled) throw new HttpError(404, { error: 'not_found' });
    if (!m2mAllowed(who.person))
      throw new HttpError(403, {
        error: 'forbidden',
        error_description: 'API Credentials need the Super User role',
      });
    return who;
  };

  router
    .add('GET', '/:tenant', 'portal', (req) => (sb.realm(req), redirect(`${root()}/`)))
    .add('GET', '/:tenant/', 'portal', (req) => {
      sb.realm(req);
      const who = current(req);
      return html(
        200,
        page(
          sb.displayName(),
          `${nav(who?.person)}<h1>${escapeHtml(sb.displayName())}</h1>${
            who
              ? `<p>Welcome, ${escapeHtml(who.person.name)}.</p>`
              : `<p><a href="${root()}/login">Sign in</a> to manage your organisation.</p>`
          }`,
        ),
      );
    })
    .add('GET', '/:tenant/login', 'portal', (req) => {
      sb.realm(req);
      return html(
        200,
        page(
          'Sign in',
          `<h1>Sign in</h1><form method="post" action="${root()}/login">${field('username', 'Username', { required: true, autocomplete: 'username' })}${field('password', 'Password', { type: 'password', required: true, autocomplete: 'current-password' })}<button type="submit">Sign in</button></form>`,
        ),
      );
    })
    .add('POST', '/:tenant/login', 'portal', async (req) => {
      sb.realm(req);
      const form = await readForm(req);
      const person = authenticatePerson(form.get('username') ?? '', form.get('password') ?? '');
      if (!person)
        return html(
          401,
          page(
            'Sign in',
            `<h1>Sign in</h1>${errorLine('Invalid username or password.')}<p><a href="${root()}/login">Try again</a></p>`,
          ),
        );
      const sid = randomBytes(24).toString('base64url');
      sessions.set(sid, { userId: person.id, csrf: randomBytes(24).toString('base64url') });
      return redirect(`${root()}/settings`, {
        'set-cookie': `${COOKIE}=${sid}; Path=${root()}/; HttpOnly; SameSite=Lax`,
      });
    })
    .add('POST', '/:tenant/logout', 'portal', (req) => {
      sb.realm(req);
      const sid = /(?:^|;\s*)sandbox_portal=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1];
      if (sid) sessions.delete(sid);
      return redirect(`${root()}/`, { 'set-cookie': `${COOKIE}=; Path=${root()}/; Max-Age=0` });
    })
    .add('GET', '/:tenant/settings', 'portal', (req) => {
      sb.realm(req);
      const who = requireLogin(req);
      const entry = m2mAllowed(who.person)
        ? `<li><a href="${root()}/settings/api-credentials">API Credentials</a></li>`
        : '';
      return html(
        200,
        page(
          'Settings',
          `${nav(who.person)}<h1>Settings</h1><ul><li>Organisation profile</li><li>Users</li>${entry}</ul>`,
        ),
      );
    })
    .add('GET', '/:tenant/settings/api-credentials', 'portal', (req) =>
      credentialsPage(guardCredentials(req)),
    )
    .add('POST', '/:tenant/settings/api-credentials', 'portal', async (req) => {
      const who = guardCredentials(req);
      const form = await readForm(req);
      checkCsrf(form, who.session);
      const label = (form.get('label') ?? '').trim();
      const expiresOn = form.get('expiresOn') ?? '';
      const expiresAt = expiresOn ? parseExpiryDate(expiresOn) : undefined;
      if (!label || label.length > 100)
        return credentialsPage(who, { error: 'A label of 1 to 100 characters is required.' });
      if (expiresOn && (expiresAt === undefined || expiresAt <= sb.clock.now())) {
        return credentialsPage(who, { error: 'The expiry date must be a future date (YYYY-MM-DD).' });
      }
      const { credential, secret } = sb.credentials.create(label, { expiresAt });
      return credentialsPage(who, { secret: { clientId: credential.clientId, secret, verb: 'created' } });
    })
    .add('POST', '/:tenant/settings/api-credentials/:clientId/rotate', 'portal', async (req) => {
      const who = guardCredentials(req);
      checkCsrf(await readForm(req), who.session);
      const secret = sb.credentials.rotate(req.params.clientId);
      if (!secret) return credentialsPage(who, { error: 'Only an active credential can be rotated.' });
      return credentialsPage(who, { secret: { clientId: req.params.clientId, secret, verb: 'rotated' } });
    })
    .add('POST', '/:tenant/settings/api-credentials/:clientId/revoke', 'portal', async (req) => {
      const who = guardCredentials(req);
      checkCsrf(await readForm(req), who.session);
      if (!sb.credentials.revoke(req.params.clientId))
        return credentialsPage(who, { error: 'No such credential.' });
      return redirect(`${root()}/settings/api-credentials`);
    });
}
