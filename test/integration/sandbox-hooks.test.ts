import { eventually } from '../helpers/host';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
beforeAll(async () => {
  sb = await sandboxFixture();
});
afterAll(() => sb.close());
beforeEach(() => sb.hook('reset'));

describe('faults hook', () => {
  it('the next N requests to a route fail with the status, with Retry-After where it fits; then normal', async () => {
    expect((await sb.hook('faults', { route: 'token', count: 2, status: 503 })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const res = await sb.clientCredentials();
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
    }
    expect((await sb.clientCredentials()).status).toBe(200);
    const stats = (await sb.hook('stats')).body;
    expect(stats.faults).toBe(2);
    expect(stats.token.client_credentials).toBe(1);
  });

  it('429 with a chosen Retry-After on GraphQL, in GraphQL error shape', async () => {
    const token = (await sb.clientCredentials()).body.access_token;
    await sb.hook('faults', { route: 'graphql', status: 429, retryAfterSeconds: 7 });
    const res = await sb.graphql(token, '{ currentTenant { name } }');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.body.errors[0].extensions.code).toBe('SANDBOX_FAULT');
    expect((await sb.graphql(token, '{ currentTenant { name } }')).status).toBe(200);
  });

  it('a dropped connection', async () => {
    await sb.hook('faults', { route: 'token', reset: true });
    await expect(sb.clientCredentials()).rejects.toThrow();
    expect((await sb.clientCredentials()).status).toBe(200);
  });

  it('a delay, after which the request is served normally', async () => {
    await sb.hook('faults', { route: 'graphql', delayMs: 300 });
    const token = (await sb.clientCredentials()).body.access_token;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 50);
    await expect(
      fetch(`${sb.baseUrl}/graphql`, {
        method: 'POST',
        signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: '{ currentTenant { name } }' }),
      }),
    ).rejects.toThrow(/abort/i);
    clearTimeout(timer);
    expect((await sb.graphql(token, '{ currentTenant { name } }')).status).toBe(200);
  });

  it('handled: the mutation runs, then only its answer fails (502) or comes late', async () => {
    const person = (await sb.personTokens()).access_token;
    const set = (value: number) =>
      sb.graphql(
        person,
        'mutation S($id: ID!, $v: Float) { updateKpi(id: $id, input: { value: $v }) { id } }',
        {
          id: 'kpi-0000004',
          v: value,
        },
      );
    const m2m = (await sb.clientCredentials()).body.access_token;
    const value = async () =>
      (await sb.graphql(m2m, '{ kpis(first: 4) { edges { node { id value } } } }')).body.data.kpis.edges[3]
        .node.value as number;
    await sb.hook('faults', { route: 'graphql', status: 502, handled: true });
    const r = await set(4.25);
    expect(r.status).toBe(502);
    expect(r.body.errors[0].extensions.code).toBe('SANDBOX_FAULT');
    expect(await value()).toBe(4.25);
    await sb.hook('faults', { route: 'graphql', delayMs: 2000, handled: true });
    const started = Date.now();
    let answered = false;
    const late = set(5.5).finally(() => (answered = true));
    // Applied before its answer came: the value is there while the answer is still held back.
    await eventually(async () => (await value()) === 5.5, 'the delayed mutation to be applied', 1_900, 10);
    expect(answered).toBe(false);
    expect((await late).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_990);
    expect((await sb.hook('stats')).body.graphql.mutationsByPerson.admin).toBe(2);
    // match: only writes meet the fault; the query in between passes by without using it up.
    await sb.hook('faults', { route: 'graphql', status: 503, match: 'mutation', after: 1 });
    expect((await set(6)).status).toBe(200);
    expect(await value()).toBe(6);
    expect((await set(7)).status).toBe(503);
    expect(await value()).toBe(6);
    expect((await set(8)).status).toBe(200);
  });

  it.each([
    [{ route: 'token', status: 500, handled: true, delayMs: 1 }, 'exactly one of'],
    [{ route: 'token', reset: true, handled: true }, 'handled goes with'],
    [{ route: 'nowhere', status: 500 }, 'route'],
    [{ route: 'token' }, 'exactly one of'],
    [{ route: 'token', status: 200 }, 'status'],
    [{ route: 'token', status: 500, delayMs: 10 }, 'exactly one of'],
  ])('bad fault spec %j → 400 naming %s', async (spec, word) => {
    const res = await sb.hook('faults', spec);
    expect(res.status).toBe(400);
    expect(res.body.error_description).toContain(word);
  });
});

describe('stats, clock and reset hooks', () => {
  it('stats count each grant, device authorizations and GraphQL operations by kind', async () => {
    const token = (await sb.clientCredentials()).body.access_token;
    const person = (await sb.personTokens()).access_token;
    await sb.graphql(token, '{ currentTenant { name } }');
    await sb.graphql(token, '{ currentTenant { name } }');
    const set = 'mutation S($id: ID!) { updateKpi(id: $id, input: { value: 1 }) { id } }';
    await sb.graphql(person, set, { id: 'kpi-0000001' });
    await sb.graphql(token, set, { id: 'kpi-0000001' }); // refused: M2M is read-only
    expect((await sb.hook('stats')).body).toEqual({
      token: { client_credentials: 1, device_code: 1, refresh_token: 0 },
      deviceAuthorization: 1,
      graphql: {
        queries: 2,
        mutations: 1,
        refused: 1,
        byOperation: { anonymous: 2, S: 1 },
        mutationsByPerson: { admin: 1 },
        rateLimited: 0,
        tooComplex: 0,
      },
      faults: 0,
    });
  });

  it('limits: a complexity ceiling refused as GraphQL servers refuse it, a rate per credential with its headers; reset lifts both', async () => {
    const token = (await sb.clientCredentials()).body.access_token as string;
    const page = 'query P($n: Int!) { controls(first: $n) { edges { node { id title } } } }';
    expect((await sb.hook('limits', { complexity: 100, rate: 2 })).body).toEqual({
      complexity: 100,
      rate: 2,
    });
    // Cost 1 + n × (edges 1 + node 1 + id 1 + title 1): 20 fits (81), 30 does not (121).
    const small = await sb.graphql(token, page, { n: 20 });
    expect(small.status).toBe(200);
    expect(small.body.errors).toBeUndefined();
    expect(small.headers.get('ratelimit-limit')).toBe('2');
    expect(small.headers.get('ratelimit-remaining')).toBe('1');
    const big = await sb.graphql(token, page, { n: 30 });
    expect(big.status).toBe(200);
    expect(big.body.errors[0]).toMatchObject({
      message: 'Query has complexity 121, which exceeds the maximum of 100. Request fewer records per page',
      extensions: { code: 'MAX_COMPLEXITY_EXCEEDED' },
    });
    // Five at once at 2 a second: a window holds at most two, so even across a second's turn at least one is refused.
    const burst = await Promise.all(Array.from({ length: 5 }, () => sb.graphql(token, page, { n: 1 })));
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of burst) expect(r.headers.get('ratelimit-limit')).toBe('2');
    for (const r of refused) {
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get('ratelimit-remaining')).toBe('0');
      expect(r.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    }
    const stats = (await sb.hook('stats')).body.graphql;
    expect(stats.tooComplex).toBe(1);
    expect(stats.rateLimited).toBe(refused.length);
    expect((await sb.hook('limits', { rate: 0 })).status).toBe(400);
    expect((await sb.hook('limits', { speed: 1 })).status).toBe(400);
    await sb.hook('reset');
    const fresh = (await sb.clientCredentials()).body.access_token as string;
    const free = await sb.graphql(fresh, page, { n: 500 });
    expect(free.body.errors).toBeUndefined();
    expect(free.headers.get('ratelimit-limit')).toBeNull();
  });

  it('mutations/refuse: one record’s mutations fail with a domain error until cleared; others go through', async () => {
    const person = (await sb.personTokens()).access_token;
    const set = (id: string) =>
      sb.graphql(person, 'mutation S($id: ID!) { updateKpi(id: $id, input: { value: 7 }) { id value } }', {
        id,
      });
    expect((await sb.hook('mutations/refuse', { id: 'kpi-0000002', message: 'locked' })).body).toEqual({
      refused: ['kpi-0000002'],
    });
    const refused = await set('kpi-0000002');
    expect(refused.body.errors[0]).toMatchObject({ message: 'locked', extensions: { code: 'DOMAIN_RULE' } });
    expect((await set('kpi-0000003')).body.data.updateKpi).toEqual({ id: 'kpi-0000003', value: 7 });
    expect((await sb.hook('mutations/refuse', { id: 'kpi-0000002', clear: true })).body.refused).toEqual([]);
    expect((await set('kpi-0000002')).body.data.updateKpi.value).toBe(7);
    expect((await sb.hook('mutations/refuse', { id: '' })).status).toBe(400);
  });

  it('clock rejects negative or non-integer moves', async () => {
    expect((await sb.hook('clock', { advanceSeconds: -5 })).status).toBe(400);
    expect((await sb.hook('clock', { advanceSeconds: 'soon' })).status).toBe(400);
  });

  it('a frozen clock moves only when advanced; unfrozen it catches up with real time, never backwards', async () => {
    const frozen = Date.parse((await sb.hook('clock', { frozen: true })).body.now);
    await new Promise((r) => setTimeout(r, 1100));
    expect(Date.parse((await (await fetch(`${sb.baseUrl}/_sandbox/clock`)).json()).now)).toBe(frozen);
    expect(Date.parse((await sb.hook('clock', { advanceSeconds: 5 })).body.now)).toBe(frozen + 5000);
    const running = Date.parse((await sb.hook('clock', { frozen: false })).body.now);
    expect(running).toBeGreaterThanOrEqual(frozen + 5000);
    await sb.hook('reset');
  });

  it('reset restores data, credentials, clock and stats — the demo credential keeps its secret', async () => {
    const created = (await sb.hook('credentials', { label: 'temp' })).body;
    await sb.hook('data/mutate', { collection: 'users', deletes: 3 });
    await sb.advance(10_000);
    await sb.hook('reset');
    expect((await sb.clientCredentials(created.clientId, created.clientSecret)).body.error).toBe(
      'invalid_client',
    );
    const token = (await sb.clientCredentials()).body.access_token;
    expect((await sb.graphql(token, '{ users { totalCount } }')).body.data.users.totalCount).toBe(50);
    // The refused request after the reset and the demo one: counting started again at zero.
    expect((await sb.hook('stats')).body.token.client_credentials).toBe(2);
  });

  it('hooks want JSON', async () => {
    const res = await fetch(`${sb.baseUrl}/_sandbox/clock`, { method: 'POST', body: 'advanceSeconds=5' });
    expect(res.status).toBe(415);
  });
});
