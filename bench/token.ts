import {
  ConfidentialClientApplication,
  ProtocolMode,
  type INetworkModule,
  type NetworkResponse,
} from '@azure/msal-node';
import { ClientCredentialsProvider } from '../shared/auth/client-credentials';
import { startSandbox, type RunningSandbox } from '../sandbox/server';

/**
 * IdP requests for N concurrent cold calls, ours vs @azure/msal-node's acquireTokenByClientCredential,
 * against the same sandbox; and the cost of a cached call as a ratio to msal-node's cache hit.
 */
const secrets = (value: string) => ({ get: async () => value, invalidate: () => undefined });

const tokenRequests = async (sb: RunningSandbox) =>
  ((await (await fetch(`${sb.baseUrl}/_sandbox/stats`)).json()) as { token: { client_credentials: number } })
    .token.client_credentials;

/** msal-node wants an https authority; this maps its https URLs to the sandbox's loopback http. */
function networkClient(httpsBase: string, httpBase: string): INetworkModule {
  const send = async <T>(
    method: string,
    url: string,
    options?: { headers?: Record<string, string>; body?: string },
  ): Promise<NetworkResponse<T>> => {
    const res = await fetch(url.replace(httpsBase, httpBase), {
      method,
      headers: options?.headers,
      body: options?.body,
    });
    return { status: res.status, headers: Object.fromEntries(res.headers), body: (await res.json()) as T };
  };
  return {
    sendGetRequestAsync: (url, o) => send('GET', url, o),
    sendPostRequestAsync: (url, o) => send('POST', url, o),
  };
}

function msalClient(sb: RunningSandbox) {
  const httpsBase = sb.baseUrl.replace('http://', 'https://');
  const authority = `${httpsBase}/auth/realms/${sb.tenant}`;
  const oidc = `${authority}/protocol/openid-connect`;
  return new ConfidentialClientApplication({
    auth: {
      clientId: sb.clientId,
      clientSecret: sb.clientSecret,
      authority,
      knownAuthorities: [new URL(httpsBase).host],
      authorityMetadata: JSON.stringify({
        issuer: authority,
        token_endpoint: `${oidc}/token`,
        authorization_endpoint: `${oidc}/auth`,
        jwks_uri: `${oidc}/certs`,
        end_session_endpoint: `${oidc}/logout`,
      }),
    },
    system: { protocolMode: ProtocolMode.OIDC, networkClient: networkClient(httpsBase, sb.baseUrl) },
  });
}

async function cold(
  sb: RunningSandbox,
  n: number,
  kind: 'ours' | 'msal',
): Promise<{ requests: number; failedCalls: number }> {
  const before = await tokenRequests(sb);
  let calls: Array<Promise<unknown>>;
  if (kind === 'ours') {
    const p = new ClientCredentialsProvider(
      { name: sb.tenant, baseUrl: sb.baseUrl, authUrl: sb.authUrl, clientId: sb.clientId },
      secrets(sb.clientSecret),
      's',
    );
    calls = Array.from({ length: n }, () => p.getToken());
  } else {
    const c = msalClient(sb);
    calls = Array.from({ length: n }, () =>
      c.acquireTokenByClientCredential({ scopes: [`${sb.clientId}/.default`] }),
    );
  }
  // Failed calls are counted, not hidden: many parallel requests can exhaust sockets.
  const failedCalls = (await Promise.allSettled(calls)).filter((r) => r.status === 'rejected').length;
  return { requests: (await tokenRequests(sb)) - before, failedCalls };
}

async function perCallMicros(calls: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(1000, calls); i++) await fn(); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await fn();
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

export async function tokenBench(): Promise<Record<string, unknown>> {
  const sb = await startSandbox({ records: 1, acceptClientCredentialsScope: true });
  try {
    const concurrency: Record<
      string,
      Record<'ours' | 'msal', { requests: number; failedCalls: number }>
    > = {};
    for (const n of [100, 1_000, 10_000])
      concurrency[n] = { ours: await cold(sb, n, 'ours'), msal: await cold(sb, n, 'msal') };
    const ours = new ClientCredentialsProvider(
      { name: sb.tenant, baseUrl: sb.baseUrl, authUrl: sb.authUrl, clientId: sb.clientId },
      secrets(sb.clientSecret),
      's',
    );
    const msal = msalClient(sb);
    const request = { scopes: [`${sb.clientId}/.default`] };
    const oursUs = await perCallMicros(100_000, () => ours.getToken());
    const msalUs = await perCallMicros(10_000, () => msal.acquireTokenByClientCredential(request));
    for (const [n, c] of Object.entries(concurrency)) {
      console.error(
        `cold ×${n}: ours ${c.ours.requests} IdP request(s) (${c.ours.failedCalls} failed), msal-node ${c.msal.requests} (${c.msal.failedCalls} failed)`,
      );
    }
    console.error(`cached call: ours ${oursUs.toFixed(2)} µs, msal-node ${msalUs.toFixed(2)} µs`);
    return {
      bench: 'token',
      idpRequestsForConcurrentColdCalls: concurrency,
      cachedCallMicros: { ours: Number(oursUs.toFixed(3)), msal: Number(msalUs.toFixed(3)) },
      cachedCallCostRatioToMsal: Number((oursUs / msalUs).toFixed(4)),
    };
  } finally {
    await sb.close();
  }
}
