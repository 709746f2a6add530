import { startSandbox, type RunningSandbox, type StartOptions } from '../../sandbox/server';

export type { StartOptions };

/** A real sandbox on a free loopback port, with small typed helpers for its HTTP surfaces. */
export async function sandboxFixture(options: StartOptions = {}) {
  const running: RunningSandbox = await startSandbox({ records: 50, ...options });
  const oidc = `${running.authUrl}/realms/${running.tenant}/protocol/openid-connect`;

  const form = async (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  const hook = async (path: string, body?: unknown) => {
    const res = await fetch(`${running.baseUrl}/_sandbox/${path}`, {
      method: body === undefined && path === 'stats' ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined && path === 'stats' ? undefined : JSON.stringify(body ?? {}),
    });
    return { status: res.status, body: await res.json() };
  };

  const graphql = async (token: string | undefined, query: string, variables?: Record<string, unknown>) => {
    const res = await fetch(`${running.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  };

  const tokenRequest = (fields: Record<string, string>, headers?: Record<string, string>) =>
    form(`${oidc}/token`, fields, headers);

  const clientCredentials = (clientId = running.clientId, clientSecret = running.clientSecret) =>
    tokenRequest({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });

  const deviceAuthorization = (fields: Record<string, string> = { client_id: 'portal', scope: 'openid' }) =>
    form(`${oidc}/auth/device`, fields);

  const pollDevice = (deviceCode: string) =>
    tokenRequest({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: 'portal',
      device_code: deviceCode,
    });

  const refresh = (refreshToken: string) =>
    tokenRequest({ grant_type: 'refresh_token', client_id: 'portal', refresh_token: refreshToken });

  const advance = (seconds: number) => hook('clock', { advanceSeconds: seconds });

  /** Device code approved by the seeded admin, polled once: a person's token response. */
  const personTokens = async (username = 'admin') => {
    const device = await deviceAuthorization();
    await hook('device/approve', { userCode: device.body.user_code, username });
    const tokens = await pollDevice(device.body.device_code);
    if (tokens.status !== 200) throw new Error(`device flow failed: ${JSON.stringify(tokens.body)}`);
    return tokens.body as {
      access_token: string;
      refresh_token: string;
      expires_in: number;
      refresh_expires_in: number;
    };
  };

  /**
   * The app settings that point the app (or the CLI) at this sandbox. Personal fields kept as sent: the tests that
   * compare what a sink holds with the tenant's records are not about personal data; those that are
   * (test/integration/personal-data.test.ts) set SYNC_PERSONAL_DATA themselves, the app's default included.
   */
  const settings = {
    SYNC_PERSONAL_DATA: 'keep',
    TENANT_NAME: running.tenant,
    TENANT_BASE_URL: running.baseUrl,
    TENANT_AUTH_URL: running.authUrl,
    TENANT_CLIENT_ID: running.clientId,
  };

  return {
    ...running,
    settings,
    oidc,
    form,
    hook,
    graphql,
    tokenRequest,
    clientCredentials,
    deviceAuthorization,
    pollDevice,
    refresh,
    advance,
    personTokens,
  };
}

export type SandboxFixture = Awaited<ReturnType<typeof sandboxFixture>>;
