import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { BUILT_IN_OPERATIONS } from '../../shared/imports/operations';
import { LocalFileSecretStore } from '../../shared/secrets';
import { runCli } from '../helpers/cli';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';
import { webhookReceiver } from '../helpers/webhook-receiver';

jest.setTimeout(180_000);

/*
 * The write path end to end: POST /api/imports on the local host, the import orchestration applying each item
 * with the admin's delegated session against the sandbox, read back with the M2M credential.
 */
let stack: Stack;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
const seen: string[] = []; // every answer of the run, checked for tokens at the end

beforeAll(async () => {
  stack = await stackFixture({
    env: { AZURE_FUNCTIONS_ENVIRONMENT: 'Development' },
    sandbox: { records: 200 },
  });
  const { caFile, keyFile } = stack.azurite;
  // The receiver presents the stack's certificate, which the host trusts (as a real https endpoint).
  receiver = await webhookReceiver(undefined, {
    tls: { certFile: caFile as string, keyFile: keyFile as string },
    path: '/hooks/imports',
  });
  await new LocalFileSecretStore(stack.secretsFile).set('downstream-webhook-secret', receiver.secret);
});
afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

async function call(path: string, init: RequestInit = {}, key: string | null = stack.keys.function) {
  const r = await stack.json(path, init, key);
  seen.push(r.text);
  return r;
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  call('imports', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const status = (id: string) => call(`imports/${id}`);

const until = (id: string, states: string[]) =>
  eventually(
    async () => {
      const s = await status(id);
      return states.includes(s.body.state) && s.body;
    },
    `import ${id} to be ${states.join(' or ')}`,
  );

async function signIn(username = 'admin') {
  const r = await call('manage/device-login?force=true', { method: 'POST' }, stack.keys.master);
  expect(r.status).toBe(202);
  await stack.sb.hook('device/approve', { userCode: r.body.userCode, username });
  await stack.advance(5);
  await eventually(
    async () =>
      (await call(`manage/device-login/${r.body.id}`, {}, stack.keys.master)).body.state === 'authorised',
    'the admin to be signed in',
  );
}

async function m2mToken() {
  return (await stack.sb.clientCredentials()).body.access_token as string;
}

/** KPI values as the tenant holds them, read with the read-only credential. */
async function kpiValues(): Promise<Map<string, number>> {
  const r = await stack.sb.graphql(await m2mToken(), '{ kpis(first: 100) { edges { node { id value } } } }');
  return new Map(
    (r.body.data.kpis.edges as Array<{ node: { id: string; value: number } }>).map((e) => [
      e.node.id,
      e.node.value,
    ]),
  );
}

const mutationsBy = async (person = 'admin') =>
  ((await stack.sb.hook('stats')).body.graphql.mutationsByPerson[person] as number | undefined) ?? 0;

const kpiItem = (n: number, value: number, key = `row-${n}`) => ({
  key,
  variables: { id: `kpi-${String(n).padStart(7, '0')}`, input: { value } },
});

/**
 * An import of `items` whose every answer the tenant holds `delayMs`: posted, and waited on until `applied` of them
 * ran — what a test needs to break something mid-import. The tenant's mutations by the admin before it, to count from.
 */
async function slowImport(items: ReturnType<typeof kpiItem>[], applied: number, delayMs = 200) {
  await stack.sb.hook('faults', { route: 'graphql', count: 200, delayMs });
  const before = await mutationsBy();
  const r = await post({ operation: 'updateKpi', items });
  expect(r.status).toBe(202);
  await eventually(async () => (await mutationsBy()) >= before + applied, 'a few items applied');
  return { r, before };
}

describe('imports: write-back with the admin session', () => {
  let kpiIds: string[];

  beforeAll(async () => {
    kpiIds = [...(await kpiValues()).keys()];
  });

  it('without a signed-in admin: 409 admin_login_required naming the admin page, nothing accepted', async () => {
    const before = (await stack.sb.hook('stats')).body.graphql.mutations;
    const r = await post({ operation: 'updateKpi', items: [kpiItem(1, 1)] });
    expect(r.status).toBe(409);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({ code: 'admin_login_required', adminPage: '/api/manage' });
    expect(r.body.detail).toContain('/api/manage');
    expect((await stack.sb.hook('stats')).body.graphql.mutations).toBe(before);
  });

  it('a mixed batch: each item its own result, the tenant’s message for a refused one; read back with M2M', async () => {
    expect(kpiIds[0]).toBe('kpi-0000001');
    await signIn();
    await stack.sb.hook('mutations/refuse', {
      id: 'kpi-0000003',
      message: 'KPI kpi-0000003 is locked for the period',
    });
    const before = await mutationsBy();
    const items = [
      kpiItem(1, 11.5),
      kpiItem(2, 22),
      kpiItem(3, 33),
      { key: 'missing', variables: { id: 'kpi-9999999', input: { value: 1 } } },
      kpiItem(4, 44),
    ];
    const r = await post({ operation: 'updateKpi', items, callbackUrl: receiver.url });
    expect(r.status === 202 ? '' : r.text).toBe('');
    // The words both webhooks answer with; an import's earlier ones (state, statusUri) kept as aliases.
    expect(r.body).toEqual({
      id: expect.any(String),
      status: 'queued',
      statusUrl: `${stack.apiBaseUrl}/imports/${r.body.id}`,
      state: 'queued',
      statusUri: `${stack.apiBaseUrl}/imports/${r.body.id}`,
    });
    expect(r.headers.get('location')).toBe(r.body.statusUrl);
    const done = await until(r.body.id, ['completed', 'failed']);
    expect(done).toMatchObject({
      status: 'completed',
      state: 'completed',
      operation: 'updateKpi',
      total: 5,
      person: 'admin',
      counts: { applied: 3, failed: 2, outcome_unknown: 0, skipped: 0, pending: 0 },
    });
    expect(done.results).toEqual([
      { key: 'row-1', state: 'applied' },
      { key: 'row-2', state: 'applied' },
      {
        key: 'row-3',
        state: 'failed',
        code: 'import_item_refused',
        message: 'KPI kpi-0000003 is locked for the period',
      },
      {
        key: 'missing',
        state: 'failed',
        code: 'import_item_refused',
        message: expect.stringContaining('kpi-9999999'),
      },
      { key: 'row-4', state: 'applied' },
    ]);
    const values = await kpiValues();
    expect([values.get('kpi-0000001'), values.get('kpi-0000002'), values.get('kpi-0000004')]).toEqual([
      11.5, 22, 44,
    ]);
    expect(values.get('kpi-0000003')).not.toBe(33);
    expect((await mutationsBy()) - before).toBe(5);
    // The run history and its signed callback say the same.
    const run = await call(`manage/runs/${r.body.id}`, {}, stack.keys.master);
    expect(run.body).toMatchObject({
      kind: 'import',
      outcome: 'failed',
      error: { code: 'import_item_refused' },
      items: { operation: 'updateKpi', applied: 3, failed: 2 },
    });
    expect(run.body.items.failures.map((f: { key: string }) => f.key)).toEqual(['row-3', 'missing']);
    // The status page names each failed item by the caller's key, with the tenant's words.
    const page = (await stack.api('manage/status', {}, stack.keys.master).then((x) => x.text())) as string;
    expect(page).toContain('Operation <strong>updateKpi</strong>: 3 of 5 items applied, 2 failed');
    expect(page).toMatch(
      /<th scope="row">row-3<\/th><td>import_item_refused<\/td><td>KPI kpi-0000003 is locked for the period/,
    );
    const callback = await eventually(
      async () => receiver.received.find((m) => m.type === 'import.completed' && m.data.id === r.body.id),
      'the signed callback',
    );
    expect((callback.data.results as unknown[]).length).toBe(5);
    expect(stack.logRecords().some((l) => l.message === 'import failed' && l.runId === r.body.id)).toBe(true);
    await stack.sb.hook('mutations/refuse', { id: 'kpi-0000003', clear: true });
  });

  it('the CLI runs the same code with the stored session: a result per item, exit 1 when one failed', async () => {
    await stack.sb.hook('mutations/refuse', { id: 'kpi-0000009', message: 'KPI kpi-0000009 is archived' });
    const file = join(stack.dir, 'items.ndjson');
    await writeFile(file, `${JSON.stringify(kpiItem(8, 88))}\n\n${JSON.stringify(kpiItem(9, 99))}\n`);
    const env = {
      ...stack.sb.settings,
      // Against the sandbox in development: its built-in operations are allowed.
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      LOCAL_SECRETS_FILE: stack.secretsFile,
      AzureWebJobsStorage: stack.azurite.connectionString,
      NODE_EXTRA_CA_CERTS: stack.azurite.caFile as string,
    };
    const before = await mutationsBy();
    const r = await runCli(['import', '--operation', 'updateKpi', '--file', file, '--json'], {
      env,
      cwd: stack.dir,
    });
    expect([r.code, r.stderr]).toEqual([1, '']);
    expect(JSON.parse(r.stdout)).toMatchObject({
      operation: 'updateKpi',
      counts: { applied: 1, failed: 1, outcome_unknown: 0, skipped: 0, pending: 0 },
      results: [
        { key: 'row-8', state: 'applied' },
        {
          key: 'row-9',
          state: 'failed',
          code: 'import_item_refused',
          message: 'KPI kpi-0000009 is archived',
        },
      ],
    });
    expect((await mutationsBy()) - before).toBe(2);
    expect((await kpiValues()).get('kpi-0000008')).toBe(88);
    // Bad input is refused before anything is sent, naming the line or the item.
    await writeFile(
      file,
      `${JSON.stringify({ key: 'a', variables: { id: 'kpi-0000001', input: { value: 'x' } } })}\n`,
    );
    const bad = await runCli(['import', '--operation', 'updateKpi', '--file', file], { env, cwd: stack.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/items\.0\.variables \(key "a"\): \$input/);
    await writeFile(file, 'not json\n');
    expect(
      (await runCli(['import', '--operation', 'updateKpi', '--file', file], { env, cwd: stack.dir })).stderr,
    ).toMatch(/items\.ndjson:1: not a JSON line/);
    expect((await mutationsBy()) - before).toBe(2);
    await stack.sb.hook('mutations/refuse', { id: 'kpi-0000009', clear: true });
  });

  it('the CLI with no tenant and no running stack says to start one: an embedded sandbox cannot keep a session', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ti-import-embedded-'));
    try {
      const file = join(dir, 'items.ndjson');
      await writeFile(file, `${JSON.stringify(kpiItem(1, 1))}\n`);
      const env = { TENANT_NAME: '', TENANT_BASE_URL: '', TENANT_AUTH_URL: '', TENANT_CLIENT_ID: '' };
      const r = await runCli(['import', '--operation', 'updateKpi', '--file', file], { env, cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('run `npm start`, then `tenant-integrations login` and this import');
      // Refused before a sandbox is started or a session looked for: nothing to sign in to that would last.
      expect(r.stderr).not.toContain('using an embedded sandbox');
      expect(r.stdout).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('Idempotency-Key: the same key and body is the same import, applied once; another body is 422', async () => {
    const body = {
      operation: 'updateControl',
      items: [{ key: 'c1', variables: { id: 'ctl-0000001', input: { status: 'implemented' } } }],
    };
    const first = await post(body, { 'idempotency-key': 'import-key-1' });
    expect(first.status).toBe(202);
    await until(first.body.id, ['completed']);
    const before = await mutationsBy();
    const again = await post(body, { 'idempotency-key': 'import-key-1' });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.state).toBe('completed');
    expect(await mutationsBy()).toBe(before);
    const other = await post(
      { ...body, items: [{ key: 'c1', variables: { id: 'ctl-0000002', input: { status: 'implemented' } } }] },
      {
        'idempotency-key': 'import-key-1',
      },
    );
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
  });

  it('bad input: a 4xx problem naming what is wrong, before anything is sent', async () => {
    const before = (await stack.sb.hook('stats')).body.graphql.mutations;
    const cases: Array<[unknown, number, string, RegExp]> = [
      ['{not json', 400, 'invalid_request', /not valid JSON/],
      [{ operation: 'updateKpi', items: [] }, 400, 'invalid_request', /at least one item/],
      [
        { operation: 'dropTables', items: [kpiItem(1, 1)] },
        400,
        'unknown_operation',
        /updateKpi, updateControl/,
      ],
      [
        { operation: 'updateKpi', items: [kpiItem(1, 1, 'same'), kpiItem(2, 2, 'same')] },
        400,
        'invalid_request',
        /"same" is also the key of items\.0/,
      ],
      [
        {
          operation: 'updateKpi',
          items: [{ key: 'k', variables: { id: 'kpi-0000001', input: { value: 'high' } } }],
        },
        400,
        'invalid_request',
        /items\.0\.variables \(key "k"\): \$input.*value/,
      ],
      [
        { operation: 'updateKpi', items: [{ key: 'k', variables: { id: 'kpi-0000001' } }] },
        400,
        'invalid_request',
        /\$input/,
      ],
      [
        {
          operation: 'updateKpi',
          items: [{ key: 'k', variables: { id: 'x', input: { value: 1 }, extra: 1 } }],
        },
        400,
        'invalid_request',
        /\$extra: not a variable of updateKpi/,
      ],
      [
        { operation: 'updateKpi', items: [kpiItem(1, 1)], query: 'mutation { x }' },
        400,
        'invalid_request',
        /query/,
      ],
      [
        { operation: 'updateKpi', items: [kpiItem(1, 1)], callbackUrl: 'http://169.254.169.254/x' },
        400,
        'invalid_request',
        /callbackUrl/,
      ],
      [
        { operation: 'updateKpi', items: Array.from({ length: 1001 }, (_, i) => kpiItem(1, i, `k${i}`)) },
        400,
        'invalid_request',
        /at most 1000 items/,
      ],
    ];
    // Hostile bodies, refused on their text before anything parses them (docs/import.md, "Bad input").
    const huge = Object.fromEntries(Array.from({ length: 400_000 }, (_, i) => [`v${i}`, 0]));
    cases.push(
      [
        { operation: 'updateKpi', items: [{ key: 'k', variables: huge }] },
        400,
        'invalid_request',
        /items\.0: \d+ bytes; an item may be at most 8192.*\$v0: not a variable of updateKpi/,
      ],
      [
        `{"operation":"updateKpi","items":[{"key":"k","variables":{"id":${'['.repeat(5000)}${']'.repeat(5000)}}}]}`,
        400,
        'invalid_request',
        /nested deeper than 32 levels/,
      ],
      [
        {
          operation: 'updateKpi',
          items: [{ key: 'k', variables: { id: 'kpi-0000001', input: { value: 1 }, a: 1, b: 2 } }],
        },
        400,
        'invalid_request',
        /\$a: not a variable of updateKpi/,
      ],
    );
    for (const [body, code, errorCode, detail] of cases) {
      const r = await post(body);
      expect([JSON.stringify(body).slice(0, 60), r.status, r.body.code]).toEqual([
        JSON.stringify(body).slice(0, 60),
        code,
        errorCode,
      ]);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.detail).toMatch(detail);
    }
    const known = await post({ operation: 'nope', items: [kpiItem(1, 1)] });
    expect(known.body.knownOperations).toEqual(['updateKpi', 'updateControl']);
    expect(
      (await call('imports', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }))
        .status,
    ).toBe(415);
    expect((await call('imports/not-an-id')).status).toBe(400);
    expect((await call('imports/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await call('imports', { method: 'POST', body: '{}' }, null)).status).toBe(401);
    expect((await stack.sb.hook('stats')).body.graphql.mutations).toBe(before);
  });

  it('any body: only 202 or a 4xx problem, never a 500 (fast-check)', async () => {
    const variables = fc.oneof(
      fc.record({
        id: fc.constantFrom('kpi-0000005', 'kpi-0000006'),
        input: fc.record({ value: fc.double({ noNaN: true, noDefaultInfinity: true }) }),
      }),
      fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })),
    );
    const body = fc.oneof(
      fc.record(
        {
          operation: fc.constantFrom('updateKpi', 'updateControl', 'x', ''),
          items: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), variables }, { requiredKeys: [] }), {
            maxLength: 4,
          }),
          callbackUrl: fc.constantFrom('http://127.0.0.1:1/cb', 'ftp://x', 'not a url'),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 3 }),
    );
    const accepted: string[] = [];
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await post(b);
        if (r.status === 202) accepted.push(r.body.id);
        else {
          expect(r.status).toBeGreaterThanOrEqual(400);
          expect(r.status).toBeLessThan(500);
          expect(r.body.code).toEqual(expect.any(String));
        }
      }),
      { numRuns: 60 },
    );
    for (const id of accepted)
      expect(['completed', 'failed']).toContain((await until(id, ['completed', 'failed'])).state);
  });

  it('a session lost mid-import pauses it (waiting_for_admin); a new sign-in resumes it, nothing applied twice', async () => {
    // Values no id, port or timestamp in a durable history can hold (the history test looks for them).
    const items = Array.from({ length: 30 }, (_, i) => kpiItem(10 + i, 1000 + i + 0.375));
    const { r, before } = await slowImport(items, 3, 300);
    // An administrator signs the admin out everywhere, and the access token the app holds runs out.
    await stack.sb.hook('sessions/end', { username: 'admin' });
    await stack.sb.advance(301);
    const waiting = await until(r.body.id, ['waiting_for_admin']).catch(async (err) => {
      console.log(JSON.stringify((await status(r.body.id)).body).slice(0, 3000), stack.logs().slice(-5000));
      throw err;
    });
    // Each failed item itself, so a failure here says which item and why (a count would not).
    expect(waiting.results.filter((x: { state: string }) => x.state === 'failed')).toEqual([]);
    expect(waiting.counts.failed).toBe(0);
    expect(waiting.counts.applied).toBeGreaterThanOrEqual(3);
    expect(waiting.counts.applied + waiting.counts.pending).toBe(30);
    expect(waiting.waitingForAdmin).toMatchObject({
      reason: expect.stringContaining('refresh refused'),
      action: expect.stringContaining('/api/manage'),
    });
    expect(
      stack.logRecords().some((l) => l.message === 'import waiting for admin' && l.runId === r.body.id),
    ).toBe(true);
    const run = await call(`manage/runs/${r.body.id}`, {}, stack.keys.master);
    expect(run.body).toMatchObject({
      outcome: 'running',
      items: { waitingForAdmin: { reason: expect.any(String) } },
    });
    const page = await (await stack.api('manage/status', {}, stack.keys.master)).text();
    expect(page).toContain(`import ${r.body.id} waits for admin to sign in again`);
    expect(page).toContain('<strong>Waiting for an admin</strong>');
    // A new import is refused until someone signs in.
    expect((await post({ operation: 'updateKpi', items: [kpiItem(1, 1)] })).body.code).toBe(
      'admin_login_required',
    );
    await stack.sb.hook('faults/clear');
    await signIn();
    await stack.advance(60);
    const done = await until(r.body.id, ['completed', 'failed']);
    expect(done).toMatchObject({
      state: 'completed',
      counts: { applied: 30, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 },
    });
    expect((await mutationsBy()) - before).toBe(30);
    const values = await kpiValues();
    expect(items.every((it) => values.get(it.variables.id) === it.variables.input.value)).toBe(true);
  });

  it('no admin within IMPORTS_ADMIN_WAIT: failed, the items not sent skipped, the alert’s record', async () => {
    await stack.sb.hook('sessions/end', { username: 'admin' });
    await stack.sb.advance(301);
    const r = await post({ operation: 'updateKpi', items: [kpiItem(7, 7), kpiItem(8, 8)] });
    expect(r.status).toBe(202);
    await until(r.body.id, ['waiting_for_admin']);
    await stack.advance(86_400 + 60);
    const done = await until(r.body.id, ['failed']);
    expect(done.error.code).toBe('admin_wait_expired');
    expect(done.counts).toEqual({ applied: 0, failed: 0, outcome_unknown: 0, skipped: 2, pending: 0 });
    expect(done.results.map((x: { state: string }) => x.state)).toEqual(['skipped', 'skipped']);
    expect(
      stack
        .logRecords()
        .some(
          (l) => l.message === 'import failed' && l.runId === r.body.id && l.code === 'admin_wait_expired',
        ),
    ).toBe(true);
  });

  describe('exactly once, tried against the tenant’s faults (docs/import.md, “What exactly once means here”)', () => {
    beforeAll(async () => {
      await stack.sb.hook('faults/clear');
      await signIn();
    });
    afterEach(() => stack.sb.hook('faults/clear'));

    /** Posts `items`, waits for the end; each item's result by its key, and the mutations the tenant ran meanwhile. */
    async function importOf(items: ReturnType<typeof kpiItem>[]) {
      const before = await mutationsBy();
      const r = await post({ operation: 'updateKpi', items });
      expect(r.status === 202 ? '' : r.text).toBe('');
      const done = await until(r.body.id, ['completed', 'failed']);
      const byKey = new Map<string, { state: string; code?: string; message?: string }>(
        done.results.map((x: { key: string }) => [x.key, x]),
      );
      return { id: r.body.id as string, done, byKey, ran: (await mutationsBy()) - before };
    }

    it('the answer cut after the tenant ran it: outcome_unknown (ran once, never sent again), said apart everywhere', async () => {
      await stack.sb.hook('faults', { route: 'graphql', cut: true, match: 'mutation UpdateKpi' });
      const items = [kpiItem(41, 41.25), kpiItem(42, 42.25), kpiItem(43, 43.25)];
      const { id, done, byKey, ran } = await importOf(items);
      expect(ran).toBe(3); // every item ran once: the cut one was not sent again
      expect(done.counts).toEqual({ applied: 2, failed: 0, outcome_unknown: 1, skipped: 0, pending: 0 });
      const [unknownKey] = [...byKey].find(([, x]) => x.state === 'outcome_unknown') ?? [];
      expect(byKey.get(unknownKey as string)).toMatchObject({
        code: 'outcome_unknown',
        message: expect.stringContaining('may or may not have been applied'),
      });
      // It did apply: "unknown" is the truth as the app knows it, never "applied" and never "failed".
      const values = await kpiValues();
      expect(items.every((it) => values.get(it.variables.id) === it.variables.input.value)).toBe(true);
      const run = await call(`manage/runs/${id}`, {}, stack.keys.master);
      expect(run.body).toMatchObject({
        outcome: 'failed',
        error: { code: 'outcome_unknown', action: expect.stringContaining('Check the record at the tenant') },
        items: { applied: 2, outcome_unknown: 1, failures: [{ key: unknownKey, code: 'outcome_unknown' }] },
      });
      const page = await (await stack.api('manage/status', {}, stack.keys.master)).text();
      expect(page).toContain('<strong>1 of unknown outcome</strong>');
    });

    it('a 502 after the tenant ran it: outcome_unknown, not re-sent; a 500 before it ran is unknown too (nothing tells them apart)', async () => {
      await stack.sb.hook('faults', {
        route: 'graphql',
        status: 502,
        handled: true,
        match: 'mutation UpdateKpi',
      });
      const first = await importOf([kpiItem(44, 44.5)]);
      expect(first.ran).toBe(1);
      expect(first.byKey.get('row-44')).toMatchObject({ state: 'outcome_unknown' });
      expect((await kpiValues()).get('kpi-0000044')).toBe(44.5);
      await stack.sb.hook('faults', { route: 'graphql', status: 500, match: 'mutation UpdateKpi' });
      const second = await importOf([kpiItem(45, 45.5)]);
      expect(second.ran).toBe(0);
      expect(second.byKey.get('row-45')).toMatchObject({ state: 'outcome_unknown' });
    });

    it('data beside errors (partial): applied, the tenant’s words kept — never a refusal to post again', async () => {
      await stack.sb.hook('faults', {
        route: 'graphql',
        partial: true,
        match: 'mutation UpdateKpi',
        message: 'the audit trail is delayed',
      });
      const { done, byKey, ran } = await importOf([kpiItem(46, 46.5)]);
      expect(ran).toBe(1);
      expect(done.state).toBe('completed');
      expect(byKey.get('row-46')).toEqual({
        key: 'row-46',
        state: 'applied',
        message: 'the audit trail is delayed',
      });
    });

    it('429 twice: retried (the tenant ran nothing), applied once', async () => {
      await stack.sb.hook('faults', {
        route: 'graphql',
        status: 429,
        count: 2,
        retryAfterSeconds: 0,
        match: 'mutation UpdateKpi',
      });
      const { byKey, ran } = await importOf([kpiItem(47, 47.5)]);
      expect(ran).toBe(1);
      expect(byKey.get('row-47')?.state).toBe('applied');
    });

    it('503 eight times, longer than the retries: the items wait (waiting_for_tenant), then go once when it answers', async () => {
      await stack.sb.hook('faults', {
        route: 'graphql',
        status: 503,
        count: 8,
        retryAfterSeconds: 0,
        match: 'mutation UpdateKpi',
      });
      const before = await mutationsBy();
      const r = await post({ operation: 'updateKpi', items: [kpiItem(48, 48.5), kpiItem(49, 49.5)] });
      const waiting = await until(r.body.id, ['waiting_for_tenant']);
      expect(waiting.counts).toMatchObject({ applied: 0, failed: 0, pending: 2 });
      expect(waiting.results.map((x: { state: string }) => x.state)).toEqual(['pending', 'pending']);
      expect(waiting.waitingForTenant).toMatchObject({
        reason: expect.stringContaining('HTTP 503'),
        nextAttemptAt: expect.any(String),
        action: expect.stringContaining('sent when the tenant answers again'),
      });
      expect(
        stack.logRecords().some((l) => l.message === 'import waiting for tenant' && l.runId === r.body.id),
      ).toBe(true);
      const run = await call(`manage/runs/${r.body.id}`, {}, stack.keys.master);
      expect(run.body).toMatchObject({
        outcome: 'running',
        items: { waitingForTenant: { reason: expect.any(String) } },
      });
      await stack.advance(31);
      const done = await until(r.body.id, ['completed', 'failed']);
      expect(done.counts).toEqual({ applied: 2, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
      expect((await mutationsBy()) - before).toBe(2);
    });

    it('the identity provider failing the refresh mid-import: the items not sent wait for the tenant, nothing applied twice', async () => {
      const items = Array.from({ length: 20 }, (_, i) => kpiItem(60 + i, 2000 + i + 0.625));
      const { r, before } = await slowImport(items, 3);
      // The access token runs out, and every refresh meets an unavailable identity provider.
      await stack.sb.hook('faults', { route: 'token', status: 503, count: 50, retryAfterSeconds: 0 });
      await stack.advance(301);
      const waiting = await until(r.body.id, ['waiting_for_tenant']);
      expect(
        waiting.results.filter((x: { state: string }) => !['applied', 'pending'].includes(x.state)),
      ).toEqual([]);
      expect(waiting.counts.failed + waiting.counts.outcome_unknown).toBe(0);
      expect(waiting.counts.applied + waiting.counts.pending).toBe(20);
      expect(waiting.waitingForTenant.reason).toMatch(/no access token/);
      await stack.sb.hook('faults/clear');
      await stack.advance(31);
      const done = await until(r.body.id, ['completed', 'failed']);
      expect(done.counts).toEqual({ applied: 20, failed: 0, outcome_unknown: 0, skipped: 0, pending: 0 });
      expect((await mutationsBy()) - before).toBe(20);
    });

    it('a session lost, then another admin signs in: the import waits for its own admin, says who; resumes under them only', async () => {
      const items = Array.from({ length: 16 }, (_, i) => kpiItem(80 + i, 3000 + i + 0.125));
      const { r, before } = await slowImport(items, 2);
      await stack.sb.hook('sessions/end', { username: 'admin' });
      await stack.advance(301);
      await until(r.body.id, ['waiting_for_admin']);
      await stack.sb.hook('faults/clear');
      // Checked before the session: a malformed body is a 400, whoever is signed in or not.
      expect((await post({ operation: 'updateKpi', items: 'nope' })).status).toBe(400);
      await signIn('member');
      await stack.advance(61);
      await stack.advance(61);
      const still = (await status(r.body.id)).body;
      expect(still).toMatchObject({
        state: 'waiting_for_admin',
        person: 'admin',
        waitingForAdmin: { person: 'admin', action: expect.stringContaining('admin, the admin this import') },
      });
      expect(await mutationsBy('member')).toBe(0);
      await signIn('admin');
      await stack.advance(61);
      const done = await until(r.body.id, ['completed', 'failed']);
      expect(done.counts).toMatchObject({ applied: 16, failed: 0, outcome_unknown: 0 });
      expect((await mutationsBy()) - before).toBe(16);
      expect(await mutationsBy('member')).toBe(0);
    });

    it('a replay of an accepted import’s Idempotency-Key after the session is lost answers that import, never 409', async () => {
      const body = { operation: 'updateKpi', items: [kpiItem(99, 99.5)] };
      const first = await post(body, { 'idempotency-key': 'replay-after-loss' });
      await until(first.body.id, ['completed']);
      await stack.sb.hook('sessions/end', { username: 'admin' });
      await stack.advance(301);
      // An import that needs a token finds the session lost: a new import now gets 409.
      const other = await post({ operation: 'updateKpi', items: [kpiItem(98, 98.5)] });
      await until(other.body.id, ['waiting_for_admin']);
      expect((await post({ operation: 'updateKpi', items: [kpiItem(98, 1)] })).status).toBe(409);
      const again = await post(body, { 'idempotency-key': 'replay-after-loss' });
      expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([
        202,
        first.body.id,
        'true',
      ]);
      await signIn();
      await stack.advance(61);
      await until(other.body.id, ['completed']);
    });

    it('a replay of an accepted import while the tenant is down answers that import — its key is read before the tenant is asked', async () => {
      const body = { operation: 'updateKpi', items: [kpiItem(94, 94.5)] };
      const first = await post(body, { 'idempotency-key': 'replay-while-down' });
      expect(first.status).toBe(202);
      await until(first.body.id, ['completed']);
      // The schema read on the first import has gone stale; the tenant now answers nothing but 503.
      await stack.advance(120);
      await stack.sb.hook('faults', { route: 'graphql', status: 503, count: 1000 });
      try {
        const again = await post(body, { 'idempotency-key': 'replay-while-down' });
        expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([
          202,
          first.body.id,
          'true',
        ]);
        // A new import is what needs the tenant: it answers 503 with Retry-After, nothing accepted.
        const fresh = await post({ operation: 'updateKpi', items: [kpiItem(93, 93.5)] });
        expect(fresh.status).toBe(503);
        expect(fresh.headers.get('retry-after')).toBeTruthy();
      } finally {
        await stack.sb.hook('faults/clear');
      }
    });

    it('a stored batch whose document is not the allow-list’s any more is refused before anything is sent', async () => {
      await stack.sb.hook('sessions/end', { username: 'admin' });
      await stack.advance(301);
      const before = await mutationsBy();
      const r = await post({ operation: 'updateKpi', items: [kpiItem(97, 97.5)] });
      expect(r.status).toBe(202);
      await until(r.body.id, ['waiting_for_admin']);
      // Someone with write access to storage swaps the document for another mutation.
      const blob = stack
        .blobService()
        .getContainerClient('imports')
        .getBlockBlobClient(`${r.body.id}/items.json`);
      const stored = JSON.parse((await blob.downloadToBuffer()).toString('utf8'));
      stored.document = BUILT_IN_OPERATIONS.updateControl.document;
      const text = JSON.stringify(stored);
      await blob.upload(text, Buffer.byteLength(text));
      await signIn();
      await stack.advance(61);
      const done = await until(r.body.id, ['failed']);
      expect(done.error).toMatchObject({
        code: 'import_failed',
        message: expect.stringContaining('not on the allow-list'),
      });
      expect(done.counts).toMatchObject({ applied: 0, skipped: 1 });
      expect((await mutationsBy()) - before).toBe(0);
    });

    it('a stored batch whose items changed (the document left as it was) is refused before anything is sent', async () => {
      await stack.sb.hook('sessions/end', { username: 'admin' });
      await stack.advance(301);
      const before = await mutationsBy();
      const r = await post({ operation: 'updateKpi', items: [kpiItem(96, 96.5), kpiItem(95, 95.5)] });
      expect(r.status).toBe(202);
      await until(r.body.id, ['waiting_for_admin']);
      // Someone with write access to storage points an item at another record, and changes its value.
      const blob = stack
        .blobService()
        .getContainerClient('imports')
        .getBlockBlobClient(`${r.body.id}/items.json`);
      const stored = JSON.parse((await blob.downloadToBuffer()).toString('utf8'));
      stored.items[1].variables = { ...stored.items[1].variables, id: 'kpi-0000001', input: { value: -1 } };
      const text = JSON.stringify(stored);
      await blob.upload(text, Buffer.byteLength(text));
      await signIn();
      await stack.advance(61);
      const done = await until(r.body.id, ['failed']);
      expect(done.error).toMatchObject({
        code: 'import_failed',
        message: expect.stringContaining('not the ones accepted'),
      });
      expect(done.counts).toMatchObject({ applied: 0, skipped: 2 });
      expect((await mutationsBy()) - before).toBe(0);
    });
  });

  describe('after every import above', () => {
    it('no token, refresh token or device code in any answer, log line or durable history', async () => {
      const secrets = Object.values(await stack.secrets()).filter((v) => v.length > 20);
      const runs = await call('manage/runs?kind=import', {}, stack.keys.master);
      expect(runs.body.runs.length).toBeGreaterThanOrEqual(4);
      const histories = await Promise.all(
        runs.body.runs.map(async (run: { id: string }) =>
          (
            await fetch(
              `${stack.url}/runtime/webhooks/durabletask/instances/import-${run.id}?code=${stack.keys.system}&showHistory=true&showHistoryOutput=true&showInput=true`,
            )
          ).text(),
        ),
      );
      const everything = [
        ...seen,
        stack.logs(),
        ...histories,
        ...receiver.received.map((m) => JSON.stringify(m)),
      ].join('\n');
      for (const s of secrets) expect(everything).not.toContain(s);
      expect(everything).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}\./); // no JWT
      // Items' values stay out of the durable history too: it holds ids, names and counts. (A bare '1029' here once
      // matched a callback URL's port, 41029: the mid-import test's values carry a fraction no port has.)
      for (let i = 0; i < 30; i++) expect(histories.join('\n')).not.toContain(String(1000 + i + 0.375));
      for (let i = 0; i < 20; i++) expect(histories.join('\n')).not.toContain(String(2000 + i + 0.625));
      for (let i = 0; i < 16; i++) expect(histories.join('\n')).not.toContain(String(3000 + i + 0.125));
    });
  });
});

describe('an import whose start answered with an error after it was made', () => {
  it('the start made and its answer lost: 202 as that import; retried with the same key, the same import — each item sent once', async () => {
    await signIn();
    const items = [kpiItem(10, 1001), kpiItem(11, 1002), kpiItem(12, 1003)];
    const before = await mutationsBy();
    await stack.hostFaults({ loseStartAnswers: 1 });
    const first = await post({ operation: 'updateKpi', items }, { 'idempotency-key': 'lost-start-1' });
    expect([first.status, first.text]).toEqual([202, expect.any(String)]);
    const again = await post({ operation: 'updateKpi', items }, { 'idempotency-key': 'lost-start-1' });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    await until(first.body.id, ['completed']);
    expect((await mutationsBy()) - before).toBe(items.length);
  });

  it('the start made, its answer lost and the read-back dropped too: 503, the key kept; the retry answers as the import that was made — each item sent once', async () => {
    await signIn();
    const items = [kpiItem(13, 2001), kpiItem(14, 2002)];
    const before = await mutationsBy();
    await stack.hostFaults({ loseStartAnswers: 1, dropStatusReads: 1 });
    const first = await post({ operation: 'updateKpi', items }, { 'idempotency-key': 'lost-start-2' });
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: 'service_unavailable' });
    expect(first.headers.get('retry-after')).toBe('10');
    const again = await post({ operation: 'updateKpi', items }, { 'idempotency-key': 'lost-start-2' });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    await until(again.body.id, ['completed']);
    await stack.advance(120); // long past a claim's staleness: still one import
    const third = await post({ operation: 'updateKpi', items }, { 'idempotency-key': 'lost-start-2' });
    expect([third.status, third.body.id]).toEqual([202, again.body.id]);
    expect((await mutationsBy()) - before).toBe(items.length);
  });
});
