import { decodeJwt } from 'jose';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb.close());
beforeEach(() => sb.hook('reset'));

describe('device authorization request (docs/service-rules.md#device-flow)', () => {
  it('answers the seed fields: XXXX-NNNN user code, verification URIs under the realm, 600 s, interval 5', async () => {
    const res = await sb.deviceAuthorization();
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b.user_code).toMatch(/^[A-Z]{4}-\d{4}$/);
    expect(b.verification_uri).toBe(`${sb.authUrl}/realms/${sb.tenant}/device`);
    expect(b.verification_uri_complete).toBe(`${b.verification_uri}?user_code=${b.user_code}`);
    expect(b.expires_in).toBe(600);
    expect(b.interval).toBe(5);
    expect(typeof b.device_code).toBe('string');
    expect(b.device_code.length).toBeGreaterThanOrEqual(32);
  });

  it('fails with a non-success status and an error body when the request is wrong (docs/service-rules.md#device-flow)', async () => {
    // Keycloak 26 answers a missing client_id as an unknown client.
    const noClient = await sb.deviceAuthorization({ scope: 'openid' });
    expect(noClient.status).toBe(401);
    expect(noClient.body).toMatchObject({
      error: 'invalid_client',
      error_description: expect.stringContaining('client_id'),
    });
    const noScope = await sb.deviceAuthorization({ client_id: 'portal' });
    expect(noScope.status).toBe(400);
    expect(noScope.body.error).toBe('invalid_scope');
    const unknown = await sb.deviceAuthorization({ client_id: 'nobody', scope: 'openid' });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_client');
    const m2m = await sb.deviceAuthorization({ client_id: sb.clientId, scope: 'openid' });
    expect(m2m.status).toBe(400);
    expect(m2m.body.error).toBe('unauthorized_client');
  });

  it('is counted in the stats', async () => {
    await sb.deviceAuthorization();
    await sb.deviceAuthorization();
    expect((await sb.hook('stats')).body.deviceAuthorization).toBe(2);
  });
});

describe('poll state table (docs/service-rules.md#device-flow)', () => {
  it('waiting → authorization_pending (HTTP 400, error body) while the person has not logged in', async () => {
    const { body } = await sb.deviceAuthorization();
    const poll = await sb.pollDevice(body.device_code);
    expect(poll.status).toBe(400);
    expect(poll.body).toEqual({ error: 'authorization_pending', error_description: expect.any(String) });
    await sb.advance(5);
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('authorization_pending');
  });

  it('a poll within interval seconds of the last accepted poll → slow_down; waiting the interval is accepted again', async () => {
    const { body } = await sb.deviceAuthorization();
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('authorization_pending');
    await sb.advance(4);
    const fast = await sb.pollDevice(body.device_code);
    expect(fast.status).toBe(400);
    expect(fast.body.error).toBe('slow_down');
    // slow_down polls do not move the reference point: 5 s after the last accepted poll is fine.
    await sb.advance(1);
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('authorization_pending');
  });

  it('approved → 200 with the device-flow token response (access 300 s, refresh 1800 s, Bearer)', async () => {
    const { body } = await sb.deviceAuthorization();
    await sb.pollDevice(body.device_code);
    expect((await sb.hook('device/approve', { userCode: body.user_code, username: 'admin' })).status).toBe(
      200,
    );
    await sb.advance(5);
    const res = await sb.pollDevice(body.device_code);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ expires_in: 300, refresh_expires_in: 1800, token_type: 'Bearer' });
    expect(typeof res.body.access_token).toBe('string');
    expect(typeof res.body.refresh_token).toBe('string');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const claims = decodeJwt(res.body.access_token);
    expect(claims).toMatchObject({
      azp: 'portal',
      preferred_username: 'admin',
      iss: `${sb.authUrl}/realms/${sb.tenant}`,
    });
    expect((claims.exp as number) - (claims.iat as number)).toBe(300);
  });

  it('any other error stops: denied → access_denied', async () => {
    const { body } = await sb.deviceAuthorization();
    await sb.hook('device/deny', { userCode: body.user_code });
    const res = await sb.pollDevice(body.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('access_denied');
  });

  it('expires_in elapsed without login → expired_token; a new device code is needed', async () => {
    const { body } = await sb.deviceAuthorization();
    await sb.advance(599);
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('authorization_pending');
    await sb.advance(1);
    const res = await sb.pollDevice(body.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('expired_token');
    // Approval is no longer possible for the expired code either.
    expect((await sb.hook('device/approve', { userCode: body.user_code, username: 'admin' })).status).toBe(
      404,
    );
    const fresh = await sb.deviceAuthorization();
    expect(fresh.body.device_code).not.toBe(body.device_code);
  });

  it('a used or unknown device code is invalid_grant', async () => {
    const { body } = await sb.deviceAuthorization();
    await sb.hook('device/approve', { userCode: body.user_code, username: 'member' });
    expect((await sb.pollDevice(body.device_code)).status).toBe(200);
    await sb.advance(5);
    const again = await sb.pollDevice(body.device_code);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    expect((await sb.pollDevice('not-a-code')).body.error).toBe('invalid_grant');
  });

  it('polling needs client_id=portal and a device_code', async () => {
    const { body } = await sb.deviceAuthorization();
    const grant = 'urn:ietf:params:oauth:grant-type:device_code';
    expect((await sb.tokenRequest({ grant_type: grant, device_code: body.device_code })).body.error).toBe(
      'invalid_client',
    );
    expect((await sb.tokenRequest({ grant_type: grant, client_id: 'portal' })).body.error).toBe(
      'invalid_request',
    );
    expect(
      (await sb.tokenRequest({ grant_type: grant, client_id: 'x', device_code: body.device_code })).status,
    ).toBe(401);
  });
});

describe('device page (verification_uri) over HTTP', () => {
  const submit = (url: string, fields: Record<string, string>) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });

  it('log in with the seeded person, approve, and the poller gets its token', async () => {
    const { body } = await sb.deviceAuthorization();
    const pageRes = await fetch(body.verification_uri_complete);
    expect(pageRes.status).toBe(200);
    expect(await pageRes.text()).toContain(`value="${body.user_code}"`);
    const wrong = await submit(body.verification_uri, {
      user_code: body.user_code,
      username: 'admin',
      password: 'nope',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Invalid username or password');
    const login = await submit(body.verification_uri, {
      user_code: body.user_code.toLowerCase().replace('-', ''),
      username: 'admin',
      password: 'sandbox-admin',
    });
    const consent = await login.text();
    expect(login.status).toBe(200);
    const approval = /name="approval" value="([^"]+)"/.exec(consent)?.[1] as string;
    expect(approval).toBeTruthy();
    const done = await submit(`${body.verification_uri}/consent`, { approval, decision: 'approve' });
    expect(await done.text()).toContain('Device connected');
    const tokens = await sb.pollDevice(body.device_code);
    expect(tokens.status).toBe(200);
    expect(decodeJwt(tokens.body.access_token).preferred_username).toBe('admin');
    // An approval is single use.
    expect((await submit(`${body.verification_uri}/consent`, { approval, decision: 'approve' })).status).toBe(
      400,
    );
  });

  it('deny on the page makes the poller stop with access_denied', async () => {
    const { body } = await sb.deviceAuthorization();
    const login = await submit(body.verification_uri, {
      user_code: body.user_code,
      username: 'member',
      password: 'sandbox-member',
    });
    const approval = /name="approval" value="([^"]+)"/.exec(await login.text())?.[1] as string;
    await submit(`${body.verification_uri}/consent`, { approval, decision: 'deny' });
    expect((await sb.pollDevice(body.device_code)).body.error).toBe('access_denied');
  });

  it('an unknown code is refused on the page', async () => {
    const res = await submit(`${sb.authUrl}/realms/${sb.tenant}/device`, {
      user_code: 'BBBB-0000',
      username: 'admin',
      password: 'sandbox-admin',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not valid or has expired');
  });
});
