import { failure } from '../helpers/failure';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { GraphqlErrors, RequestRefused, UpstreamError } from '../../shared/errors';
import { TenantGraphqlClient, type TokenSource } from '../../shared/graphql/client';
import { paginate } from '../../shared/graphql/pager';
import { streamSchema, type StreamDefinition } from '../../shared/streams';
import { accessFixture } from '../helpers/access';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 120 });
});
afterAll(() => sb.close());
beforeEach(() => sb.hook('reset'));

const stats = async () => (await sb.hook('stats')).body;
const CONTROLS =
  'query Controls($first: Int, $after: String) { controls(first: $first, after: $after) { edges { node { id status } } pageInfo { hasNextPage endCursor } } }';
const STREAM = streamSchema.parse({
  name: 'controls',
  document: CONTROLS,
  paths: {
    records: 'controls.edges',
    node: 'node',
    hasNextPage: 'controls.pageInfo.hasNextPage',
    endCursor: 'controls.pageInfo.endCursor',
  },
}) as StreamDefinition;

describe('GraphQL client', () => {
  it('queries with the M2M token and validates data with a caller schema', async () => {
    const a = await accessFixture(sb);
    const data = await a.graphql.request('query Tenant { currentTenant { name } }', {
      schema: z.object({ currentTenant: z.object({ name: z.string() }) }),
    });
    expect(data.currentTenant.name).toBe(sb.tenant);
    const err = await failure(
      a.graphql.request('query Tenant { currentTenant { name } }', {
        schema: z.object({ currentTenant: z.object({ name: z.number() }) }),
      }),
    );
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.message).toContain('currentTenant.name');
    await a.cleanup();
  });

  it('refuses a mutation with the M2M credential before the network', async () => {
    const a = await accessFixture(sb);
    const err = await failure(
      a.graphql.request(
        'mutation SetStatus { updateControl(id: "ctl-0000001", input: { status: "implemented" }) { id } }',
      ),
    );
    expect(err).toBeInstanceOf(RequestRefused);
    expect(err.code).toBe('read_only_credential');
    const s = await stats();
    expect(s.token.client_credentials).toBe(0);
    expect(s.graphql).toEqual({
      queries: 0,
      mutations: 0,
      refused: 0,
      rateLimited: 0,
      tooComplex: 0,
      byOperation: {},
      mutationsByPerson: {},
    });
    await a.cleanup();
  });

  it('a document that does not parse is refused before the network', async () => {
    const a = await accessFixture(sb);
    await expect(a.graphql.request('{ broken')).rejects.toMatchObject({ code: 'invalid_document' });
    expect((await stats()).graphql.queries).toBe(0);
    await a.cleanup();
  });

  it('errors in a response become GraphqlErrors carrying partial data', async () => {
    const a = await accessFixture(sb);
    const err = await failure(
      a.graphql.request('query Bad { currentTenant { name } controls(first: 0) { totalCount } }'),
    );
    expect(err).toBeInstanceOf(GraphqlErrors);
    expect(err.errors[0].message).toContain('first must be between');
    expect(err.data).toEqual({ currentTenant: { name: sb.tenant }, controls: null });
    await a.cleanup();
  });

  it('a 401 invalidates the token and retries once with a fresh one', async () => {
    const a = await accessFixture(sb);
    await a.m2m.getToken();
    await sb.hook('faults', { route: 'graphql', count: 1, status: 401 });
    expect(
      (await a.graphql.request<{ currentTenant: { name: string } }>('query T { currentTenant { name } }'))
        .currentTenant.name,
    ).toBe(sb.tenant);
    expect((await stats()).token.client_credentials).toBe(2);
    await a.cleanup();
  });

  it('a second 401 in a row is not retried again', async () => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'graphql', count: 2, status: 401 });
    const err = await failure(a.graphql.request('query T { currentTenant { name } }'));
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.upstreamStatus).toBe(401);
    expect((await stats()).faults).toBe(2);
    await a.cleanup();
  });

  it.each([
    ['503 twice', { count: 2, status: 503 }],
    ['429 with Retry-After', { count: 1, status: 429, retryAfterSeconds: 0 }],
    ['a dropped connection', { count: 2, reset: true }],
    ['502 three times', { count: 3, status: 502 }],
  ])('%s → retried and answered', async (_name, fault) => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'graphql', ...fault });
    expect(await a.graphql.request('query T { currentTenant { name } }')).toEqual({
      currentTenant: { name: sb.tenant },
    });
    await a.cleanup();
  });

  it('a slow response → per-request timeout, retried', async () => {
    const a = await accessFixture(sb, {
      graphqlOptions: { timeoutMs: 200, retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 } },
    });
    await sb.hook('faults', { route: 'graphql', count: 1, delayMs: 1_000 });
    expect(await a.graphql.request('query T { currentTenant { name } }')).toEqual({
      currentTenant: { name: sb.tenant },
    });
    await a.cleanup();
  });

  it('a persistent outage fails after bounded attempts with the endpoint named', async () => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'graphql', count: 4, status: 500 });
    const err = await failure(a.graphql.request('query T { currentTenant { name } }'));
    expect(err).toMatchObject({ code: 'upstream_unavailable', upstreamStatus: 500 });
    expect(err.message).toContain(`${sb.baseUrl}/graphql`);
    await a.cleanup();
  });

  it('the caller can abort', async () => {
    const a = await accessFixture(sb);
    await sb.hook('faults', { route: 'graphql', count: 1, delayMs: 1_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stopped by caller')), 50);
    await expect(
      a.graphql.request('query T { currentTenant { name } }', { abortSignal: controller.signal }),
    ).rejects.toThrow('stopped by caller');
    await a.cleanup();
  });

  it('logs name the operation and never the variables or the token', async () => {
    const a = await accessFixture(sb);
    await a.graphql.request(CONTROLS, { variables: { first: 2, after: 'Y29udHJvbHM6MQ' } });
    const line = a.logs.find((l) => l.message === 'graphql');
    expect(line).toMatchObject({ operation: 'Controls', attempt: 1, status: 200 });
    expect(JSON.stringify(a.logs)).not.toContain('Y29udHJvbHM6MQ');
    await a.cleanup();
  });

  it('the delegated session may run mutations', async () => {
    const a = await accessFixture(sb);
    const device = await sb.deviceAuthorization();
    await sb.hook('device/approve', { userCode: device.body.user_code, username: 'admin' });
    await a.delegated.connect((await sb.pollDevice(device.body.device_code)).body);
    const data = await a.delegatedGraphql.request<{ updateControl: { status: string } }>(
      'mutation SetStatus($id: ID!) { updateControl(id: $id, input: { status: "not_applicable" }) { status } }',
      { variables: { id: 'ctl-0000001' } },
    );
    expect(data.updateControl.status).toBe('not_applicable');
    expect((await stats()).graphql.mutations).toBe(1);
    await a.cleanup();
  });
});

describe('pager', () => {
  it('walks every page of a connection once, in order, and resumes from a cursor', async () => {
    const a = await accessFixture(sb);
    const ids: string[] = [];
    const cursors: Array<string | null> = [];
    for await (const page of paginate(a.graphql, STREAM, { pageSize: 25 })) {
      ids.push(...page.records.map((r) => (r as { id: string }).id));
      cursors.push(page.endCursor);
    }
    expect(ids).toHaveLength(120);
    expect(new Set(ids).size).toBe(120);
    expect(cursors).toHaveLength(5);
    const resumed: string[] = [];
    for await (const page of paginate(a.graphql, STREAM, {
      pageSize: 25,
      startCursor: cursors[1],
    })) {
      resumed.push(...page.records.map((r) => (r as { id: string }).id));
    }
    expect(resumed).toEqual(ids.slice(50));
    await a.cleanup();
  });

  describe('against a misbehaving server', () => {
    let server: Server;
    let url: string;
    let reply: (vars: Record<string, unknown>) => unknown;
    let lastBody: Record<string, unknown> = {};
    beforeAll(async () => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (c) => (body += c));
        req.on('end', () => {
          lastBody = JSON.parse(body) as Record<string, unknown>;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(reply((lastBody.variables ?? {}) as Record<string, unknown>)));
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    const tokens: TokenSource = { kind: 'm2m', getToken: async () => 't', invalidate: () => undefined };
    const walk = async () => {
      const client = new TenantGraphqlClient(url, tokens, {
        retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      });
      let pages = 0;
      for await (const _ of paginate(client, STREAM, { pageSize: 2, maxPages: 50 })) pages++;
      return pages;
    };
    const page = (cursor: string | null, hasNextPage: boolean) => ({
      data: { controls: { edges: [{ node: { id: 'a' } }], pageInfo: { hasNextPage, endCursor: cursor } } },
    });

    it('a repeated cursor', async () => {
      reply = () => page('same', true);
      await expect(walk()).rejects.toThrow(/cursor repeated/);
    });
    it('hasNextPage with no cursor', async () => {
      reply = () => page(null, true);
      await expect(walk()).rejects.toThrow(/no endCursor/);
    });
    it('data: null', async () => {
      reply = () => ({ data: null });
      await expect(walk()).rejects.toThrow(/neither data nor errors/);
    });
    it('no list where the records should be', async () => {
      reply = () => ({ data: { controls: { pageInfo: { hasNextPage: false } } } });
      await expect(walk()).rejects.toThrow(/no list at controls.edges/);
    });
    it('a well-behaved server ends', async () => {
      reply = (v) => (v.after ? page('c2', false) : page('c1', true));
      expect(await walk()).toBe(2);
    });
    it("each request names its operation, for the tenant's server logs; an anonymous one names none", async () => {
      reply = () => page(null, false);
      await walk();
      expect(lastBody).toEqual({
        query: CONTROLS,
        variables: { first: 2, after: null },
        operationName: 'Controls',
      });
      const client = new TenantGraphqlClient(url, tokens);
      reply = () => ({ data: { ok: true } });
      await client.request('{ ok }');
      expect(lastBody).toEqual({ query: '{ ok }' });
    });
  });
});
