import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

let sb: SandboxFixture;
let m2m: string;
let person: string;
beforeAll(async () => {
  sb = await sandboxFixture({ records: 237, seed: 'graphql-test' });
});
afterAll(() => sb.close());
beforeEach(async () => {
  await sb.hook('reset');
  m2m = (await sb.clientCredentials()).body.access_token;
  person = (await sb.personTokens()).access_token;
});

const KINDS = ['controls', 'evidence', 'personnel', 'kpis', 'reports', 'users'];
const pageQuery = (kind: string) =>
  `query Page($first: Int, $after: String) { ${kind}(first: $first, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } totalCount } }`;

async function walk(token: string, kind: string, first: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (let guard = 0; guard < 1000; guard++) {
    const res = await sb.graphql(token, pageQuery(kind), { first, after });
    const conn = res.body.data[kind];
    ids.push(...conn.edges.map((e: { node: { id: string } }) => e.node.id));
    if (!conn.pageInfo.hasNextPage) return ids;
    after = conn.pageInfo.endCursor;
  }
  throw new Error('pagination did not end');
}

describe('GraphQL endpoint (docs/service-rules.md#graphql)', () => {
  it('answers the seed root fields tenant(name) and currentTenant', async () => {
    const res = await sb.graphql(
      m2m,
      `{ tenant(name: "${sb.tenant}") { name displayName } currentTenant { name } other: tenant(name: "x") { name } }`,
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      tenant: { name: sb.tenant, displayName: expect.any(String) },
      currentTenant: { name: sb.tenant },
      other: null,
    });
  });

  it('accepts an empty variables object', async () => {
    const res = await sb.graphql(m2m, '{ currentTenant { name } }', {});
    expect(res.body.data.currentTenant.name).toBe(sb.tenant);
  });

  it.each(KINDS)(
    '%s: a Relay connection whose pages cover every record once, in a stable order',
    async (kind) => {
      const small = await walk(m2m, kind, 50);
      expect(small).toHaveLength(237);
      expect(new Set(small).size).toBe(237);
      expect(await walk(m2m, kind, 1000)).toEqual(small);
    },
  );

  it('records carry realistic, nested fields', async () => {
    const res = await sb.graphql(
      m2m,
      '{ controls(first: 1) { edges { node { id reference title status framework owner { id name email } tags updatedAt } } } personnel(first: 1) { edges { node { firstName lastName email screening { status date } } } } }',
    );
    const control = res.body.data.controls.edges[0].node;
    expect(control.id).toBe('ctl-0000001');
    expect(control.owner.email).toMatch(/@example\.org$/);
    expect(Array.isArray(control.tags)).toBe(true);
    expect(res.body.data.personnel.edges[0].node.screening.status).toMatch(/valid|pending|expired/);
  });

  it('seeded data is deterministic per seed', async () => {
    const other = await sandboxFixture({ records: 5, seed: 'graphql-test' });
    const different = await sandboxFixture({ records: 5, seed: 'another-seed' });
    try {
      const q = '{ users(first: 5) { edges { node { id name email role } } } }';
      const token = async (f: SandboxFixture) => (await f.clientCredentials()).body.access_token;
      const mine = (await sb.graphql(m2m, q)).body.data;
      expect((await other.graphql(await token(other), q)).body.data).toEqual(mine);
      expect((await different.graphql(await token(different), q)).body.data).not.toEqual(mine);
    } finally {
      await other.close();
      await different.close();
    }
  });

  it('viewer says whether the token belongs to a person or an M2M credential', async () => {
    expect((await sb.graphql(m2m, '{ viewer { kind name readOnly } }')).body.data.viewer).toEqual({
      kind: 'm2m',
      name: sb.clientId,
      readOnly: true,
    });
    expect((await sb.graphql(person, '{ viewer { kind name readOnly } }')).body.data.viewer).toEqual({
      kind: 'person',
      name: 'admin',
      readOnly: false,
    });
  });
});

describe('mutations: people may, M2M credentials may not (docs/service-rules.md#credentials)', () => {
  const mutation =
    'mutation Set($id: ID!, $status: String) { updateControl(id: $id, input: { status: $status }) { id status } }';
  const statusOf = async (id: string) => {
    const res = await sb.graphql(m2m, '{ controls(first: 3) { edges { node { id status } } } }');
    return res.body.data.controls.edges.find((e: { node: { id: string } }) => e.node.id === id).node.status;
  };

  it('a person runs updateControl and the data changes', async () => {
    const before = await statusOf('ctl-0000002');
    const next = before === 'implemented' ? 'not_applicable' : 'implemented';
    const res = await sb.graphql(person, mutation, { id: 'ctl-0000002', status: next });
    expect(res.body.data.updateControl).toEqual({ id: 'ctl-0000002', status: next });
    expect(await statusOf('ctl-0000002')).toBe(next);
    expect((await sb.hook('stats')).body.graphql.mutations).toBe(1);
  });

  it('an M2M token is refused with a GraphQL error and the data is unchanged', async () => {
    const before = await statusOf('ctl-0000003');
    const next = before === 'implemented' ? 'not_applicable' : 'implemented';
    const res = await sb.graphql(m2m, mutation, { id: 'ctl-0000003', status: next });
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0]).toMatchObject({
      message: expect.stringContaining('read-only'),
      extensions: { code: 'FORBIDDEN' },
    });
    expect(await statusOf('ctl-0000003')).toBe(before);
    const stats = (await sb.hook('stats')).body.graphql;
    expect(stats).toMatchObject({ mutations: 0, refused: 1 });
  });

  it('bad mutation input is a GraphQL error naming the problem', async () => {
    const res = await sb.graphql(person, mutation, { id: 'ctl-0000001', status: 'sort of' });
    expect(res.body.errors[0].message).toContain('status must be one of');
    const missing = await sb.graphql(person, mutation, { id: 'ctl-9999999', status: 'implemented' });
    expect(missing.body.errors[0].message).toContain('no controls record');
  });
});

describe('data/mutate hook', () => {
  it('creates, updates and deletes exactly the named records', async () => {
    const before = new Map<string, string>();
    const all = await sb.graphql(
      m2m,
      '{ kpis(first: 1000) { edges { node { id name value target period trend unit } } totalCount } }',
    );
    for (const e of all.body.data.kpis.edges) before.set(e.node.id, JSON.stringify(e.node));
    const { body } = await sb.hook('data/mutate', { collection: 'kpis', creates: 3, updates: 5, deletes: 2 });
    expect(body.created).toHaveLength(3);
    expect(body.updated).toHaveLength(5);
    expect(body.deleted).toHaveLength(2);
    const after = await sb.graphql(
      m2m,
      '{ kpis(first: 1000) { edges { node { id name value target period trend unit } } totalCount } }',
    );
    const nodes = new Map<string, string>(
      after.body.data.kpis.edges.map((e: { node: { id: string } }) => [e.node.id, JSON.stringify(e.node)]),
    );
    expect(after.body.data.kpis.totalCount).toBe(237 + 3 - 2);
    for (const id of body.created) expect(before.has(id) || !nodes.has(id)).toBe(false);
    for (const id of body.deleted) expect(nodes.has(id)).toBe(false);
    for (const id of body.updated) expect(nodes.get(id)).not.toBe(before.get(id));
    const changed = new Set([...body.created, ...body.updated, ...body.deleted]);
    for (const [id, json] of before) if (!changed.has(id)) expect(nodes.get(id)).toBe(json);
  });

  it('rejects an unknown collection with a 400 naming it', async () => {
    const res = await sb.hook('data/mutate', { collection: 'invoices', creates: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error_description).toContain('collection');
  });
});

describe('GraphQL bad input', () => {
  const raw = (body: string, headers: Record<string, string>) =>
    fetch(`${sb.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${m2m}`, ...headers },
      body,
    });

  it('no token → 401 with WWW-Authenticate, counted as refused', async () => {
    const res = await sb.graphql(undefined, '{ currentTenant { name } }');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await sb.hook('stats')).body.graphql.refused).toBe(1);
  });

  it('a forged token → 401', async () => {
    const [h, p] = m2m.split('.');
    expect((await sb.graphql(`${h}.${p}.AAAA`, '{ currentTenant { name } }')).status).toBe(401);
  });

  it('a document that does not parse → 400 with errors', async () => {
    const res = await sb.graphql(m2m, '{ currentTenant { ');
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/Syntax Error/);
  });

  it('an unknown field → 400 with errors', async () => {
    const res = await sb.graphql(m2m, '{ invoices { id } }');
    expect(res.status).toBe(400);
  });

  it('malformed JSON → 400; wrong content type → 415; missing query → 400', async () => {
    expect((await raw('{"query": ', { 'content-type': 'application/json' })).status).toBe(400);
    expect((await raw('query=x', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect((await raw('{}', { 'content-type': 'application/json' })).status).toBe(400);
  });

  it('an oversized body → 413', async () => {
    const res = await raw(JSON.stringify({ query: `{ currentTenant { name } } #${'x'.repeat(1_100_000)}` }), {
      'content-type': 'application/json',
    });
    expect(res.status).toBe(413);
  });

  it('page size and cursor are checked', async () => {
    expect((await sb.graphql(m2m, '{ controls(first: 0) { totalCount } }')).body.errors[0].message).toContain(
      'first must be between',
    );
    expect(
      (await sb.graphql(m2m, '{ controls(first: 5000) { totalCount } }')).body.errors[0].message,
    ).toContain('first must be between');
    const users = await sb.graphql(m2m, '{ users(first: 1) { pageInfo { endCursor } } }');
    const wrongKind = await sb.graphql(
      m2m,
      `{ controls(after: "${users.body.data.users.pageInfo.endCursor}") { totalCount } }`,
    );
    expect(wrongKind.body.errors[0].message).toContain('not a cursor of controls');
  });
});
