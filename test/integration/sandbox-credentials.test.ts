import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb.close());
beforeEach(async () => {
  await sb.hook('reset');
  // Lifetimes are checked to the second: frozen, the clock moves only when a test advances it.
  await sb.hook('clock', { frozen: true });
});
afterEach(() => sb.hook('clock', { frozen: false }));

const Q = '{ currentTenant { name } }';

describe('credential lifecycle (docs/service-rules.md#credentials)', () => {
  it('create: label required, secret returned once, usable at the token endpoint', async () => {
    expect((await sb.hook('credentials', {})).status).toBe(400);
    const created = await sb.hook('credentials', { label: 'nightly export' });
    expect(created.status).toBe(201);
    expect((await sb.clientCredentials(created.body.clientId, created.body.clientSecret)).status).toBe(200);
  });

  it('rotate: new secret works, old secret invalid at once, issued tokens valid until they expire', async () => {
    const { clientId, clientSecret } = (await sb.hook('credentials', { label: 'sync' })).body;
    const issued = (await sb.clientCredentials(clientId, clientSecret)).body.access_token;
    const rotated = await sb.hook(`credentials/${clientId}/rotate`);
    expect(rotated.body.clientSecret).not.toBe(clientSecret);
    const old = await sb.clientCredentials(clientId, clientSecret);
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('unauthorized_client');
    expect((await sb.clientCredentials(clientId, rotated.body.clientSecret)).status).toBe(200);
    await sb.advance(299);
    expect((await sb.graphql(issued, Q)).status).toBe(200);
    await sb.advance(1);
    expect((await sb.graphql(issued, Q)).status).toBe(401);
  });

  it('revoke: permanent; invalid_client for new tokens; issued tokens valid up to 5 minutes', async () => {
    const { clientId, clientSecret } = (await sb.hook('credentials', { label: 'leaked' })).body;
    const issued = (await sb.clientCredentials(clientId, clientSecret)).body.access_token;
    expect((await sb.hook(`credentials/${clientId}/revoke`)).status).toBe(200);
    const res = await sb.clientCredentials(clientId, clientSecret);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect((await sb.hook(`credentials/${clientId}/rotate`)).status).toBe(409);
    expect((await sb.graphql(issued, Q)).status).toBe(200);
    await sb.advance(300);
    expect((await sb.graphql(issued, Q)).status).toBe(401);
    await sb.advance(86_400);
    expect((await sb.clientCredentials(clientId, clientSecret)).body.error).toBe('invalid_client');
  });

  it('expiry date: like revoke, from that date', async () => {
    const now = Date.parse((await (await fetch(`${sb.baseUrl}/_sandbox/clock`)).json()).now);
    const expiresAt = new Date(now + 3600_000).toISOString();
    const { clientId, clientSecret } = (await sb.hook('credentials', { label: 'temp', expiresAt })).body;
    expect((await sb.clientCredentials(clientId, clientSecret)).status).toBe(200);
    await sb.advance(3600);
    const res = await sb.clientCredentials(clientId, clientSecret);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  });

  it('unknown credential in a hook → 404', async () => {
    expect((await sb.hook('credentials/nope/rotate')).status).toBe(404);
  });
});

/** A tiny cookie-keeping browser over fetch, for the server-rendered portal. */
function portalClient(base: string) {
  let cookie = '';
  const go = async (path: string, form?: Record<string, string>) => {
    const res = await fetch(`${base}${path}`, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie, ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form) : undefined,
    });
    const set = res.headers.get('set-cookie');
    if (set) cookie = set.split(';')[0];
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  };
  return { go };
}

describe('portal: Settings → API Credentials (docs/service-rules.md#credentials)', () => {
  it('a Super User creates, sees the secret once, rotates and revokes', async () => {
    const p = portalClient(sb.baseUrl);
    const root = `/${sb.tenant}`;
    expect((await p.go(`${root}/settings/api-credentials`)).status).toBe(303);
    const login = await p.go(`${root}/login`, { username: 'admin', password: 'sandbox-admin' });
    expect(login.status).toBe(303);
    const settings = await p.go(`${root}/settings`);
    expect(settings.text).toContain('API Credentials');
    const page = await p.go(`${root}/settings/api-credentials`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1] as string;
    expect((await p.go(`${root}/settings/api-credentials`, { csrf, label: '' })).status).toBe(400);
    const created = await p.go(`${root}/settings/api-credentials`, {
      csrf,
      label: 'BI export',
      expiresOn: '',
    });
    expect(created.text).toContain('shown once');
    const secret = /id="client-secret">([^<]+)</.exec(created.text)?.[1] as string;
    const clientId = /Client ID: <code>([^<]+)</.exec(created.text)?.[1] as string;
    expect((await sb.clientCredentials(clientId, secret)).status).toBe(200);
    // Shown once: the list page never shows it again.
    expect((await p.go(`${root}/settings/api-credentials`)).text).not.toContain(secret);

    const rotated = await p.go(`${root}/settings/api-credentials/${clientId}/rotate`, { csrf });
    const newSecret = /id="client-secret">([^<]+)</.exec(rotated.text)?.[1] as string;
    expect(newSecret).not.toBe(secret);
    expect((await sb.clientCredentials(clientId, secret)).status).toBe(401);
    expect((await sb.clientCredentials(clientId, newSecret)).status).toBe(200);

    expect((await p.go(`${root}/settings/api-credentials/${clientId}/revoke`, { csrf })).status).toBe(303);
    expect((await p.go(`${root}/settings/api-credentials`)).text).toMatch(/BI export.*revoked/s);
    expect((await sb.clientCredentials(clientId, newSecret)).body.error).toBe('invalid_client');
  });

  it('refuses a form without its CSRF token', async () => {
    const p = portalClient(sb.baseUrl);
    await p.go(`/${sb.tenant}/login`, { username: 'admin', password: 'sandbox-admin' });
    expect((await p.go(`/${sb.tenant}/settings/api-credentials`, { label: 'x' })).status).toBe(403);
  });

  it('creating a credential needs the Super User role', async () => {
    const p = portalClient(sb.baseUrl);
    await p.go(`/${sb.tenant}/login`, { username: 'member', password: 'sandbox-member' });
    expect((await p.go(`/${sb.tenant}/settings`)).text).not.toContain('API Credentials');
    expect((await p.go(`/${sb.tenant}/settings/api-credentials`)).status).toBe(403);
  });

  it('where the organisation has not enabled M2M credentials, the page is absent', async () => {
    const off = await sandboxFixture({ m2mEnabled: false });
    try {
      const p = portalClient(off.baseUrl);
      await p.go(`/${off.tenant}/login`, { username: 'admin', password: 'sandbox-admin' });
      expect((await p.go(`/${off.tenant}/settings`)).text).not.toContain('API Credentials');
      expect((await p.go(`/${off.tenant}/settings/api-credentials`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
