import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/identity';
import { lookup as dnsLookup } from 'node:dns';
import { readFileSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:https';
import type { AddressInfo, LookupFunction } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';

/**
 * Key Vault, played back: an HTTPS server that answers like the vault did in the Azure SDK's own live
 * recordings (test/fixtures/key-vault/). As Key Vault does, a request without a bearer token gets the recorded
 * 401 challenge; a request with one must carry a token obtained for the challenge's resource, and must be the
 * next scripted request — method, path, api-version and body as recorded — or it is answered 400 and noted.
 * The vault keeps its real name shape (`*.vault.azure.net`), which the SDK's challenge check needs; the agent
 * resolves that name to this server.
 */
const FIXTURES = join(__dirname, '..', 'fixtures', 'key-vault');

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}
export interface Exchange {
  from?: string;
  request: { method: string; path: string; apiVersion: string; body: unknown };
  response: Answer;
}
interface Recorded {
  challenge: Answer;
  exchanges: Record<'get' | 'missing' | 'disabled' | 'set', Exchange>;
}
interface Documented {
  forbiddenByRbac: Answer;
  throttled: Answer;
  unavailable: Answer;
}

export const recorded = JSON.parse(readFileSync(join(FIXTURES, 'recorded.json'), 'utf8')) as Recorded;
export const documented = JSON.parse(readFileSync(join(FIXTURES, 'documented.json'), 'utf8')) as Documented;

const VAULT_HOST = 'tenant-kv.vault.azure.net';
const resourceOf = (challenge: Answer) =>
  /resource="([^"]+)"/.exec(challenge.headers?.['www-authenticate'] ?? '')?.[1] ?? '';

/** A stand-in for the app's managed identity: tokens name the audience they were asked for. */
export function fakeCredential() {
  const requests: Array<{ scopes: string[]; tenantId?: string }> = [];
  const credential: TokenCredential = {
    async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken> {
      const list = Array.isArray(scopes) ? scopes : [scopes];
      requests.push({ scopes: list, tenantId: options?.tenantId });
      const audience = list[0].replace(/\/\.default$/, '');
      return {
        token: `fake.${Buffer.from(JSON.stringify({ aud: audience })).toString('base64url')}`,
        expiresOnTimestamp: Date.now() + 3_600_000,
      };
    },
  };
  return { credential, requests };
}

/** The recorded get, for another secret name and value: request and answer keep their recorded shape. */
export const recordedGetOf = (name: string, value: string): Exchange => {
  const get = recorded.exchanges.get;
  return {
    ...get,
    request: { ...get.request, path: `/secrets/${name}/` },
    response: { ...get.response, body: { ...(get.response.body as object), value } },
  };
};

/** The recorded set, for another secret name and value. */
export const recordedSetOf = (name: string, value: string): Exchange => {
  const set = recorded.exchanges.set;
  return {
    ...set,
    request: { ...set.request, path: `/secrets/${name}`, body: { value, attributes: {} } },
    response: { ...set.response, body: { ...(set.response.body as object), value } },
  };
};

export async function keyVaultReplay() {
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: VAULT_HOST }], {
    keyType: 'ec',
    curve: 'P-256',
    notAfterDate: new Date(Date.now() + 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: VAULT_HOST }] },
    ],
  });
  let script: Exchange[] = [];
  // A refusal that stands until the operator fixes it (a missing role, a disabled secret) answers every matching
  // request, however many of the app's streams ask and in whatever order; the script comes first.
  let standing: Exchange | undefined;
  const served: string[] = [];
  const mismatches: string[] = [];
  const resource = resourceOf(recorded.challenge);

  const answer = (res: import('node:http').ServerResponse, a: Answer) => {
    res.writeHead(a.status, { 'content-type': 'application/json; charset=utf-8', ...a.headers });
    res.end(JSON.stringify(a.body));
  };

  const server: Server = createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', `https://${VAULT_HOST}`);
      const auth = req.headers.authorization ?? '';
      if (!auth.startsWith('Bearer ')) {
        served.push(`challenge ${req.method} ${url.pathname}`);
        return answer(res, recorded.challenge);
      }
      const aud = (() => {
        try {
          return JSON.parse(Buffer.from(auth.slice(7).split('.')[1] ?? '', 'base64url').toString('utf8')).aud;
        } catch {
          return undefined;
        }
      })();
      const refuse = (why: string) => {
        mismatches.push(why);
        answer(res, { status: 400, body: { error: { code: 'ReplayMismatch', message: why } } });
      };
      if (aud !== resource) return refuse(`token for "${aud}", not for the challenge's resource ${resource}`);
      const next = script.shift() ?? standing;
      if (!next) return refuse(`unscripted ${req.method} ${url.pathname}`);
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : null;
      const got = {
        method: req.method,
        path: url.pathname,
        apiVersion: url.searchParams.get('api-version'),
        body,
      };
      const want = { ...next.request };
      if (!isDeepStrictEqual(got, want))
        return refuse(`expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
      served.push(`${req.method} ${url.pathname} → ${next.response.status}`);
      answer(res, next.response);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;

  // The vault's real name, resolved to this server; every other name as usual.
  const lookup: LookupFunction = (hostname, options, callback) => {
    if (hostname !== VAULT_HOST) return dnsLookup(hostname, options, callback);
    if (options.all)
      return (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address: '127.0.0.1', family: 4 },
      ]);
    callback(null, '127.0.0.1', 4);
  };
  const agent = new Agent({ ca: pems.cert, lookup, keepAlive: false });

  return {
    url: `https://${VAULT_HOST}:${port}/`,
    agent,
    /** The requests the vault expects next, in order, with their recorded answers. */
    expect: (...exchanges: Exchange[]) => {
      script = [...exchanges];
      standing = undefined;
    },
    /** Answer every request like this one (after any scripted ones) until the next `expect`: a lasting fault. */
    always: (exchange: Exchange) => {
      script = [];
      standing = exchange;
    },
    /** A documented answer to the recorded `get` request. */
    answering: (exchange: Exchange, response: Answer): Exchange => ({ ...exchange, response }),
    served,
    mismatches,
    pending: () => script.length,
    close: () =>
      new Promise<void>((r) => {
        agent.destroy();
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
