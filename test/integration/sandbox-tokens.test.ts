import { decodeJwt } from 'jose';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb.close());
beforeEach(async () => {
  await sb.hook('reset');
  // Lifetimes are checked to the second: frozen, the clock moves only when a test advances it, however slow the
  // machine (a token issued at .9 s was expired after 299 s advanced plus a busy machine's tenth of a second).
  await sb.hook('clock', { frozen: true });
});
afterEach(() => sb.hook('clock', { frozen: false }));

const TENANT_QUERY = '{ currentTenant { name } }';

describe('token lifecycle (docs/service-rules.md#tokens): device-flow tokens', () => {
  it('an access token is accepted until 300 s have elapsed, then no longer authorised', async () => {
    const { access_token } = await sb.personTokens();
    expect((await sb.graphql(access_token, TENANT_QUERY)).status).toBe(200);
    await sb.advance(299);
    expect((await sb.graphql(access_token, TENANT_QUERY)).body.data.currentTenant.name).toBe(sb.tenant);
    await sb.advance(1);
    const expired = await sb.graphql(access_token, TENANT_QUERY);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toContain('invalid_token');
  });

  it('refresh with a valid refresh token → a new access token and a new refresh token', async () => {
    const first = await sb.personTokens();
    await sb.advance(300);
    const res = await sb.refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ expires_in: 300, refresh_expires_in: 1800, token_type: 'Bearer' });
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    expect(res.body.access_token).not.toBe(first.access_token);
    expect((await sb.graphql(res.body.access_token, TENANT_QUERY)).status).toBe(200);
    expect((await sb.hook('stats')).body.token.refresh_token).toBe(1);
  });

  it('like Keycloak, the previous refresh token keeps working while the session lives', async () => {
    const first = await sb.personTokens();
    const second = await sb.refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect((await sb.refresh(first.refresh_token)).status).toBe(200);
  });

  it('refresh tokens expire after 1800 s of inactivity → the refresh fails (client restarts the device flow)', async () => {
    const { refresh_token } = await sb.personTokens();
    await sb.advance(1800);
    const res = await sb.refresh(refresh_token);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('each refresh resets the 1800 s inactivity window', async () => {
    let { refresh_token } = await sb.personTokens();
    for (let i = 0; i < 3; i++) {
      await sb.advance(1700);
      const res = await sb.refresh(refresh_token);
      expect(res.status).toBe(200);
      expect(res.body.refresh_expires_in).toBe(1800);
      refresh_token = res.body.refresh_token;
    }
  });

  it('refresh needs client_id=portal and a known refresh token', async () => {
    const { refresh_token } = await sb.personTokens();
    const noClient = await sb.tokenRequest({ grant_type: 'refresh_token', refresh_token });
    expect({ status: noClient.status, error: noClient.body.error }).toEqual({
      status: 401,
      error: 'invalid_client',
    });
    expect((await sb.refresh('garbage')).body.error).toBe('invalid_grant');
  });
});

describe('sessions an administrator or the person ends (as Keycloak 26)', () => {
  afterEach(() => sb.hook('reset'));

  it('a refresh answers the scope granted at login', async () => {
    const tokens = (await sb.personTokens()) as { refresh_token: string; scope?: string };
    const refreshed = await sb.refresh(tokens.refresh_token);
    expect(refreshed.body.scope).toBe(tokens.scope);
    expect(refreshed.body.scope).toBe('openid');
  });

  it("signing a person out everywhere: their refresh answers invalid_grant 'Session not active'", async () => {
    const { refresh_token } = await sb.personTokens();
    expect((await sb.hook('sessions/end', { username: 'admin' })).body).toEqual({ ended: 1 });
    const res = await sb.refresh(refresh_token);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: 'Session not active' });
  });

  it("a disabled person: refresh answers invalid_grant 'User disabled'; the device page refuses them", async () => {
    const { refresh_token } = await sb.personTokens();
    await sb.hook('people/disable', { username: 'admin' });
    const res = await sb.refresh(refresh_token);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: 'User disabled' });
    await sb.hook('people/enable', { username: 'admin' });
    expect((await sb.refresh(refresh_token)).status).toBe(200);
  });

  it('OIDC logout (client_id + refresh_token) ends the session: 204, then the refresh token is dead', async () => {
    const { refresh_token } = await sb.personTokens();
    const out = await fetch(`${sb.oidc}/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'portal', refresh_token }),
    });
    expect(out.status).toBe(204);
    expect((await sb.refresh(refresh_token)).body).toMatchObject({ error: 'invalid_grant' });
    const discovery = await (
      await fetch(`${sb.authUrl}/realms/${sb.tenant}/.well-known/openid-configuration`)
    ).json();
    expect(discovery.end_session_endpoint).toBe(`${sb.oidc}/logout`);
  });
});

describe('client credentials (docs/service-rules.md#tokens)', () => {
  it('returns access_token, expires_in 300, Bearer and no refresh token', async () => {
    const res = await sb.clientCredentials();
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
    expect(res.body).toMatchObject({ expires_in: 300, token_type: 'Bearer' });
    const claims = decodeJwt(res.body.access_token);
    // As Keycloak 26 issues them: sub is the service-account user's UUID, azp the client, no client_id claim.
    expect(claims).toMatchObject({ azp: sb.clientId, preferred_username: `service-account-${sb.clientId}` });
    expect(claims.sub).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(claims).not.toHaveProperty('client_id');
    // The same client always has the same service-account user.
    expect(decodeJwt((await sb.clientCredentials()).body.access_token).sub).toBe(claims.sub);
  });

  it('a missing client_id is an unknown client: 401 invalid_client', async () => {
    const res = await sb.tokenRequest({ grant_type: 'client_credentials', client_secret: sb.clientSecret });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 401, error: 'invalid_client' });
  });

  it('on expiry the same call is repeated and yields a new token', async () => {
    const first = await sb.clientCredentials();
    await sb.advance(300);
    expect((await sb.graphql(first.body.access_token, TENANT_QUERY)).status).toBe(401);
    const second = await sb.clientCredentials();
    expect(second.status).toBe(200);
    expect((await sb.graphql(second.body.access_token, TENANT_QUERY)).status).toBe(200);
    expect((await sb.hook('stats')).body.token.client_credentials).toBe(2);
  });

  it('accepts HTTP Basic client authentication as Keycloak does', async () => {
    const basic = Buffer.from(`${sb.clientId}:${sb.clientSecret}`).toString('base64');
    const res = await sb.tokenRequest(
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${basic}` },
    );
    expect(res.status).toBe(200);
  });

  it('wrong secret → 401 unauthorized_client; unknown client → 401 invalid_client (Keycloak)', async () => {
    const wrong = await sb.clientCredentials(sb.clientId, 'wrong-secret');
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('unauthorized_client');
    const unknown = await sb.clientCredentials('nobody', 'x');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_client');
  });

  it('the seed call has no scope: a scope parameter is refused', async () => {
    const res = await sb.tokenRequest({
      grant_type: 'client_credentials',
      client_id: sb.clientId,
      client_secret: sb.clientSecret,
      scope: 'openid',
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });
});

describe('token endpoint bad input', () => {
  const post = (body: string, contentType: string) =>
    fetch(`${sb.oidc}/token`, { method: 'POST', headers: { 'content-type': contentType }, body });

  it.each([
    ['missing grant_type', 'client_id=portal', 'application/x-www-form-urlencoded', 400, 'invalid_request'],
    [
      'unknown grant_type',
      'grant_type=password',
      'application/x-www-form-urlencoded',
      400,
      'unsupported_grant_type',
    ],
    [
      'JSON instead of a form',
      '{"grant_type":"client_credentials"}',
      'application/json',
      400,
      'invalid_request',
    ],
    ['no content type', 'grant_type=client_credentials', 'text/plain', 400, 'invalid_request'],
    [
      'client_credentials without client_id (Keycloak 26: an unknown client)',
      'grant_type=client_credentials',
      'application/x-www-form-urlencoded',
      401,
      'invalid_client',
    ],
  ])('%s → %i %s', async (_name, body, type, status, error) => {
    const res = await post(body, type);
    expect(res.status).toBe(status);
    expect((await res.json()).error).toBe(error);
  });

  it('an oversized body → 413, and the sandbox keeps serving', async () => {
    const res = await post(
      `grant_type=client_credentials&pad=${'x'.repeat(200_000)}`,
      'application/x-www-form-urlencoded',
    );
    expect(res.status).toBe(413);
    expect((await sb.clientCredentials()).status).toBe(200);
  });

  it('another realm does not exist; GET on the token endpoint is 405', async () => {
    const other = await fetch(`${sb.authUrl}/realms/other/protocol/openid-connect/token`, { method: 'POST' });
    expect(other.status).toBe(404);
    expect((await fetch(`${sb.oidc}/token`)).status).toBe(405);
  });
});

describe('discovery and JWKS', () => {
  it('publishes the endpoints and a key that verifies issued tokens', async () => {
    const disc = await (
      await fetch(`${sb.authUrl}/realms/${sb.tenant}/.well-known/openid-configuration`)
    ).json();
    expect(disc).toMatchObject({
      issuer: `${sb.authUrl}/realms/${sb.tenant}`,
      token_endpoint: `${sb.oidc}/token`,
      device_authorization_endpoint: `${sb.oidc}/auth/device`,
      jwks_uri: `${sb.oidc}/certs`,
    });
    const { createRemoteJWKSet, jwtVerify } = await import('jose');
    const { access_token } = (await sb.clientCredentials()).body;
    const { payload } = await jwtVerify(access_token, createRemoteJWKSet(new URL(disc.jwks_uri)), {
      issuer: disc.issuer,
    });
    expect(payload.azp).toBe(sb.clientId);
  });
});
