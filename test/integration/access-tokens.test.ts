import { eventually } from '../helpers/host';
import { failure } from '../helpers/failure';
import { CredentialRejected, SecretNotFound, UpstreamError } from '../../shared/errors';
import { accessFixture } from '../helpers/access';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb.close());
beforeEach(() => sb.hook('reset'));

const tokenRequests = async () => (await sb.hook('stats')).body.token.client_credentials as number;

describe('client-credentials token provider', () => {
  it('10 000 concurrent cold calls make exactly one request to the IdP', async () => {
    const a = await accessFixture(sb);
    const tokens = await Promise.all(Array.from({ length: 10_000 }, () => a.m2m.getToken()));
    expect(new Set(tokens).size).toBe(1);
    expect(await tokenRequests()).toBe(1);
    await a.cleanup();
  });

  it('one token serves callers until the renewal window, then renews ahead of expiry', async () => {
    const a = await accessFixture(sb);
    const first = await a.m2m.getToken();
    await a.advance(239);
    expect(await a.m2m.getToken()).toBe(first);
    expect(await tokenRequests()).toBe(1);
    // 60 s before expiry: renewal starts in the background, callers still get the valid token.
    await a.advance(2);
    expect(await a.m2m.getToken()).toBe(first);
    // The renewal runs in the background: wait for its token (bounded), never for a fixed time.
    const renewed = await eventually(async () => {
      const token = await a.m2m.getToken();
      return token !== first && token;
    }, 'the renewed token');
    expect(renewed).not.toBe(first);
    expect(await tokenRequests()).toBe(2);
    await a.cleanup();
  });

  it('never hands out a token with less than 30 s left', async () => {
    const a = await accessFixture(sb);
    const first = await a.m2m.getToken();
    await a.advance(275);
    expect(await a.m2m.getToken()).not.toBe(first);
    await a.cleanup();
  });

  it('renewal failure while the old token is valid does not fail callers', async () => {
    const a = await accessFixture(sb);
    const first = await a.m2m.getToken();
    await a.advance(250);
    await sb.hook('faults', { route: 'token', count: 4, status: 503 });
    expect(await a.m2m.getToken()).toBe(first);
    // The background renewal meets the four 503s (with its retries' waits) and gives up: wait for that, bounded.
    await eventually(
      async () => a.logs.some((l) => l.message.startsWith('token renewal failed')),
      'the renewal to fail',
    );
    expect(await a.m2m.getToken()).toBe(first);
    await a.cleanup();
  });

  it('sends exactly the seed call: form-encoded client_credentials, client_id, client_secret, no scope', async () => {
    const seen: Array<{ url: string; body: string; type: string | null }> = [];
    const spy: typeof fetch = async (input, init) => {
      seen.push({
        url: String(input),
        body: String(init?.body),
        type: new Headers(init?.headers).get('content-type'),
      });
      return fetch(input, init);
    };
    const a = await accessFixture(sb, { fetch: spy });
    await a.m2m.getToken();
    expect(seen).toHaveLength(1);
    expect(seen[0].url).toBe(`${sb.authUrl}/realms/${sb.tenant}/protocol/openid-connect/token`);
    expect(seen[0].type).toBe('application/x-www-form-urlencoded');
    expect([...new URLSearchParams(seen[0].body).keys()].sort()).toEqual([
      'client_id',
      'client_secret',
      'grant_type',
    ]);
    await a.cleanup();
  });

  it('secret rotated in the store mid-run → recovery with one extra IdP call', async () => {
    const a = await accessFixture(sb);
    const old = await a.m2m.getToken();
    const { clientSecret } = (await sb.hook(`credentials/${sb.clientId}/rotate`)).body;
    await a.storeSecret(clientSecret);
    // The secret cache still holds the old value; the issued token keeps working until it expires.
    expect((await sb.graphql(old, '{ currentTenant { name } }')).status).toBe(200);
    // Inside the secret cache's TTL, so the provider first tries the cached (old) secret.
    await a.advance(275);
    const fresh = await a.m2m.getToken();
    expect(fresh).not.toBe(old);
    expect(await tokenRequests()).toBe(3); // first, the refused one with the cached old secret, the recovery
    expect((await sb.graphql(fresh, '{ currentTenant { name } }')).status).toBe(200);
    await a.cleanup();
  });

  it('revoked credential → CredentialRejected saying what to do, then fails fast without a hot loop', async () => {
    const a = await accessFixture(sb);
    const issued = await a.m2m.getToken();
    await sb.hook(`credentials/${sb.clientId}/revoke`);
    // Tokens already issued stay valid until they expire (up to 5 minutes).
    expect(await a.m2m.getToken()).toBe(issued);
    await a.advance(300);
    const err = await failure(a.m2m.getToken());
    expect(err).toBeInstanceOf(CredentialRejected);
    expect(err.code).toBe('credential_rejected');
    expect(err.message).toMatch(/API Credentials/);
    expect(err.message).toMatch(/rotate/);
    const afterFirst = await tokenRequests();
    expect(afterFirst).toBe(2); // the secret did not change, so no pointless second try
    for (let i = 0; i < 50; i++) await expect(a.m2m.getToken()).rejects.toBeInstanceOf(CredentialRejected);
    expect(await tokenRequests()).toBe(afterFirst);
    // After the back-off, one more try — and a longer back-off after that.
    await a.advance(5);
    await expect(a.m2m.getToken()).rejects.toBeInstanceOf(CredentialRejected);
    expect(await tokenRequests()).toBe(afterFirst + 1);
    await a.advance(5);
    await expect(a.m2m.getToken()).rejects.toBeInstanceOf(CredentialRejected);
    expect(await tokenRequests()).toBe(afterFirst + 1);
    await a.cleanup();
  });

  it('a missing secret is a typed error naming the secret and the command', async () => {
    const a = await accessFixture(sb);
    await a.file.set('unrelated', 'x');
    const { rm } = await import('node:fs/promises');
    await rm(a.config.localSecretsFile);
    const err = await failure(a.m2m.getToken());
    expect(err).toBeInstanceOf(SecretNotFound);
    expect(err.message).toContain('tenant-integrations secrets set tenant-client-secret');
    await a.cleanup();
  });

  describe('faults on the token route', () => {
    it.each([
      ['503 twice', { count: 2, status: 503 }],
      ['429 with Retry-After', { count: 1, status: 429, retryAfterSeconds: 0 }],
      ['a dropped connection', { count: 2, reset: true }],
      ['500 three times', { count: 3, status: 500 }],
    ])('%s → retried, then a token', async (_name, fault) => {
      const a = await accessFixture(sb);
      await sb.hook('faults', { route: 'token', ...fault });
      expect(typeof (await a.m2m.getToken())).toBe('string');
      expect(await tokenRequests()).toBe(1);
      await a.cleanup();
    });

    it('a slow IdP → timeout, retried', async () => {
      const a = await accessFixture(sb, {
        tokenOptions: { timeoutMs: 200, retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 } },
      });
      await sb.hook('faults', { route: 'token', count: 1, delayMs: 1_000 });
      expect(typeof (await a.m2m.getToken())).toBe('string');
      await a.cleanup();
    });

    it('a persistent outage → UpstreamError after the bounded attempts, naming the endpoint', async () => {
      const a = await accessFixture(sb);
      await sb.hook('faults', { route: 'token', count: 4, status: 502 });
      const err = await failure(a.m2m.getToken());
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err.code).toBe('upstream_unavailable');
      expect(err.message).toContain('/protocol/openid-connect/token');
      expect((await sb.hook('stats')).body.faults).toBe(4);
      await a.cleanup();
    });

    it('a 4xx that is not a credential problem fails fast', async () => {
      const a = await accessFixture(sb);
      await sb.hook('faults', { route: 'token', count: 1, status: 400 });
      const err = await failure(a.m2m.getToken());
      expect(err.code).toBe('upstream_rejected');
      expect((await sb.hook('stats')).body.faults).toBe(1);
      await a.cleanup();
    });
  });

  it('no secret or token appears in any log line', async () => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'token', count: 1, status: 503 });
    const token = await a.m2m.getToken();
    await a.graphql.request('query Who { viewer { name } }');
    const text = JSON.stringify(a.logs);
    expect(text).not.toContain(token);
    expect(text).not.toContain(sb.clientSecret);
    await a.cleanup();
  });
});
