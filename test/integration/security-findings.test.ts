import { HttpRequest } from '@azure/functions';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer } from '../../shared/access';
import { requestDeviceCode, pollDeviceToken } from '../../shared/device-login/idp';
import { tenantEndpoints } from '../../shared/auth/endpoints';
import { loadConfig } from '../../shared/app';
import { readBodyUpTo } from '../../shared/net/accepted';
import { LocalFileSecretStore } from '../../shared/secrets';
import { failure } from '../helpers/failure';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

/**
 * Reproductions of the adversarial review's findings (issue 18), each as the attack was made. Every test
 * here failed before its fix. Servers are real, on loopback; the "attacker" is a local server.
 */
jest.setTimeout(30_000);
// The Functions library looks for its worker module when it loads; this file only builds requests.
jest.mock('@azure/functions-core', () => jest.requireActual('../../devhost/functions-core').functionsCore, {
  virtual: true,
});

interface Listening {
  url: string;
  requests: Array<{ method?: string; url?: string; body: string }>;
  close: () => Promise<void>;
}

async function listen(
  handler: (req: IncomingMessage, body: string) => [number, Record<string, string>, string],
) {
  const requests: Listening['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      requests.push({ method: req.method, url: req.url, body });
      const [status, headers, text] = handler(req, body);
      res.writeHead(status, headers).end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  } satisfies Listening;
}

describe('token, device and refresh requests never follow a redirect', () => {
  let steal: Listening;
  let idp: Listening;
  let dir: string;
  beforeAll(async () => {
    steal = await listen(() => [200, { 'content-type': 'application/json' }, '{"access_token":"x"}']);
    // An identity provider (or a proxy in front of it) that answers every POST with a 307 elsewhere.
    idp = await listen(() => [307, { location: `${steal.url}/steal` }, '']);
    dir = await mkdtemp(join(tmpdir(), 'ti-redirect-'));
  });
  afterAll(async () => {
    await Promise.all([steal.close(), idp.close()]);
    await rm(dir, { recursive: true, force: true });
  });

  const layer = async () => {
    const config = loadConfig({
      TENANT_NAME: 'acme',
      TENANT_BASE_URL: idp.url,
      TENANT_AUTH_URL: idp.url,
      TENANT_CLIENT_ID: 'demo-sync',
      LOCAL_SECRETS_FILE: join(dir, 'secrets.json'),
    });
    const file = new LocalFileSecretStore(config.localSecretsFile);
    await file.set(config.clientSecretName, 'the-client-secret');
    await file.set('delegated-refresh-token-acme', 'the-refresh-token');
    return createAccessLayer(config);
  };

  it('client credentials: the secret never reaches the redirect target; the error names TENANT_AUTH_URL', async () => {
    const err = await failure((await layer()).m2m.getToken());
    expect(err.message).toContain('HTTP 307');
    expect(err.message).toContain('TENANT_AUTH_URL');
    expect(err.message).not.toContain('the-client-secret');
    expect(steal.requests).toEqual([]);
    expect(idp.requests[0].body).toContain('client_secret=the-client-secret'); // it did go to the IdP itself
  });

  it('refresh: the refresh token never reaches the redirect target', async () => {
    const err = await failure((await layer()).delegated.refresh());
    expect(err.message).toContain('TENANT_AUTH_URL');
    expect(steal.requests).toEqual([]);
  });

  it('device code request and poll: nothing reaches the redirect target; a poll that is redirected ends the flow', async () => {
    const endpoints = tenantEndpoints({ name: 'acme', baseUrl: idp.url, authUrl: idp.url, clientId: 'x' });
    expect((await failure(requestDeviceCode(endpoints))).message).toContain('TENANT_AUTH_URL');
    const poll = await pollDeviceToken(endpoints, 'the-device-code');
    expect(poll.outcome).toMatchObject({ kind: 'error', error: 'redirect_refused' });
    expect(steal.requests).toEqual([]);
  });
});

describe('the IdP cannot hand the admin page a javascript: link', () => {
  it.each([
    'javascript:alert(document.cookie)',
    'data:text/html,<script>x</script>',
    'http://idp.example.com/device',
  ])('verification_uri %s is a malformed answer naming the field', async (link) => {
    const idp = await listen(() => [
      200,
      { 'content-type': 'application/json' },
      JSON.stringify({
        device_code: 'd',
        user_code: 'ABCD-1234',
        verification_uri: link,
        expires_in: 600,
        interval: 5,
      }),
    ]);
    try {
      const endpoints = tenantEndpoints({ name: 'acme', baseUrl: idp.url, authUrl: idp.url, clientId: 'x' });
      const err = await failure(requestDeviceCode(endpoints));
      expect(err).toMatchObject({ code: 'upstream_malformed' });
      expect(err.message).toContain('verification_uri: must be an https URL');
    } finally {
      await idp.close();
    }
  });
});

describe('the sandbox', () => {
  let sb: SandboxFixture;
  beforeAll(async () => {
    sb = await sandboxFixture({ records: 5 });
  });
  afterAll(() => sb?.close());

  it('answers a bad %-encoding in a Basic header with 400 (it used to leave the socket open, unanswered)', async () => {
    const basic = Buffer.from('demo-sync:%E0%A4%A').toString('base64');
    const res = await sb.tokenRequest(
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${basic}` },
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request' });
  });

  it('hooks refuse what a web page can forge: no JSON content type, or a foreign Origin', async () => {
    const rotate = `${sb.baseUrl}/_sandbox/credentials/${sb.clientId}/rotate`;
    // A cross-site <form method=post> sends no JSON content type…
    const form = await fetch(rotate, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    // …and a page's fetch carries its Origin.
    const foreign = await fetch(`${sb.baseUrl}/_sandbox/reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: '{}',
    });
    expect(foreign.status).toBe(403);
    // The demo credential still works: nothing was rotated or reset.
    expect((await sb.clientCredentials()).status).toBe(200);
    // The sandbox's own page origin, and tools that send none, are fine.
    const own = await fetch(`${sb.baseUrl}/_sandbox/clock`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: sb.baseUrl },
      body: '{"advanceSeconds":1}',
    });
    expect(own.status).toBe(200);
  });

  it('refuses a request of thousands of aliases before it runs (it took ~4 GB and 53 s)', async () => {
    const token = (await sb.clientCredentials()).body.access_token as string;
    const aliases = Array.from(
      { length: 3000 },
      (_, i) => `a${i}: controls(first: 1000) { edges { node { id } } }`,
    );
    const res = await sb.graphql(token, `{ ${aliases.join(' ')} }`);
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors[0]).toMatchObject({ extensions: { code: 'QUERY_TOO_COMPLEX' } });
    expect(res.body.errors[0].message).toContain('3000 connections');
    // An ordinary query is untouched.
    expect(
      (await sb.graphql(token, '{ controls(first: 2) { edges { node { id } } } }')).body.data,
    ).toBeTruthy();
  });
});

describe('the export body', () => {
  it('is not read past its limit: an endless body is refused after the first chunks', async () => {
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(4096));
      },
    });
    const request = { headers: new Headers(), body: endless } as unknown as HttpRequest;
    expect(await readBodyUpTo(request, 16 * 1024)).toBeUndefined();
    expect(pulled).toBeLessThan(10);
  });

  it('a declared Content-Length over the limit is refused without reading', async () => {
    const request = new HttpRequest({
      method: 'POST',
      url: 'http://127.0.0.1/api/exports',
      headers: { 'content-length': String(1 << 30) },
      body: { string: '{}' },
    });
    expect(await readBodyUpTo(request, 16 * 1024)).toBeUndefined();
  });
});
