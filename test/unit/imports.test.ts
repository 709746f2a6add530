import { readdirSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import {
  IMPORT,
  importInstanceId,
  SESSION_CHECK_MS,
  SUPERSEDED_WAIT_MS,
  tenantRetryMs,
} from '../../shared/imports/orchestration';
import { sentAs } from '../../shared/imports/apply';
import { boundsProblems, MAX_DEPTH, MAX_ITEM_BYTES } from '../../shared/imports/body-bounds';
import {
  GraphqlErrors,
  LoginRequired,
  OutcomeUnknown,
  RequestRefused,
  UpstreamError,
} from '../../shared/errors';
import {
  loadOperations,
  operationOf,
  schemaProblems,
  variableProblems,
} from '../../shared/imports/operations';
import { importHash, parseImportRequest } from '../../shared/imports/request';
import { ScriptedOrchestration } from '../helpers/orchestration';

// The Functions worker's core module cannot exist here: the local host's stand-in records the registrations.
jest.mock('@azure/functions-core', () => jest.requireActual('../../devhost/functions-core').functionsCore, {
  virtual: true,
});
const { registrations } = jest.requireActual(
  '../../devhost/functions-core',
) as typeof import('../../devhost/functions-core');

beforeAll(() => {
  const dir = join(__dirname, '..', '..', 'functions');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) require(join(dir, file));
});

const ID = '5a1b2c3d-1111-4222-8333-444455556666';
const START = Date.parse('2026-11-23T12:00:00Z');
const input = (extra: Record<string, unknown> = {}) => ({
  id: ID,
  tenant: 'acme',
  operation: 'updateKpi',
  total: 3,
  requestedAt: new Date(START).toISOString(),
  adminWaitMs: 3_600_000,
  ...extra,
});
const counts = (applied: number, pending: number, failed = 0) => ({
  applied,
  failed,
  outcome_unknown: 0,
  skipped: 0,
  pending,
});
const run = (i: unknown, startAt = START) =>
  new ScriptedOrchestration(registrations, IMPORT.orchestrator, i, {
    instanceId: importInstanceId(ID),
    startAt,
  });

describe('the import orchestration, driven through its registered generator', () => {
  it('applies, finishes, and calls back; every name it calls is registered', async () => {
    const o = run(input({ callbackUrl: 'https://example.org/cb' }));
    let e = await o.run();
    expect(e.customStatus).toMatchObject({ state: 'running', counts: counts(0, 3) });
    expect(e.scheduled.map((s) => s.name)).toEqual([IMPORT.apply]);
    o.complete(IMPORT.apply, { counts: counts(3, 0) });
    e = await o.run();
    expect(e.scheduled[0]).toMatchObject({ name: IMPORT.finish, input: { error: undefined } });
    o.complete(IMPORT.finish, counts(3, 0));
    e = await o.run();
    expect(e.scheduled[0].name).toBe(IMPORT.notify);
    o.complete(IMPORT.notify);
    e = await o.run();
    expect(e.done).toBe(true);
    expect(e.output).toMatchObject({
      state: 'completed',
      counts: counts(3, 0),
      callback: { status: 'delivered' },
    });
    for (const name of Object.values(IMPORT)) expect(registrations.has(name)).toBe(true);
  });

  it('a lost session: waiting_for_admin, the alert activity, a check each minute as new, then resumes', async () => {
    const o = run(input());
    await o.run();
    o.complete(IMPORT.apply, { counts: counts(1, 2), sessionLost: 'refresh refused: invalid_grant' });
    let e = await o.run();
    expect(e.customStatus).toMatchObject({
      state: 'waiting_for_admin',
      waitingForAdmin: {
        reason: 'refresh refused: invalid_grant',
        until: new Date(START + 3_600_000).toISOString(),
      },
    });
    expect(e.scheduled[0].name).toBe(IMPORT.waiting);
    o.complete(IMPORT.waiting);
    e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      kind: 'timer',
      fireAt: new Date(START + SESSION_CHECK_MS).toISOString(),
    });
    o.fireTimer();
    e = await o.run();
    const next = e.continuedAsNew as ReturnType<typeof input>;
    expect(next).toMatchObject({ waiting: { since: new Date(START).toISOString() }, counts: counts(1, 2) });
    // The next generation: still no session, so another minute.
    const second = run(next, START + SESSION_CHECK_MS);
    e = await second.run();
    expect(e.customStatus).toMatchObject({ state: 'waiting_for_admin' });
    second.complete(IMPORT.session, false);
    e = await second.run();
    expect(e.scheduled[0].kind).toBe('timer');
    second.fireTimer();
    const third = run((await second.run()).continuedAsNew, START + 2 * SESSION_CHECK_MS);
    await third.run();
    third.complete(IMPORT.session, true);
    e = await third.run();
    expect(e.customStatus).toMatchObject({ state: 'running', counts: counts(1, 2) });
    expect(e.scheduled[0].name).toBe(IMPORT.apply);
    third.complete(IMPORT.apply, { counts: counts(3, 0) });
    await third.run();
    third.complete(IMPORT.finish, counts(3, 0));
    e = await third.run();
    expect(e.output).toMatchObject({ state: 'completed' });
  });

  it('no admin within IMPORTS_ADMIN_WAIT: finishes failed with admin_wait_expired', async () => {
    const since = new Date(START).toISOString();
    const o = run(
      input({ waiting: { since, reason: 'refresh refused' }, counts: counts(1, 2) }),
      START + 3_600_000,
    );
    await o.run();
    o.complete(IMPORT.session, false);
    const e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      name: IMPORT.finish,
      input: { error: { code: 'admin_wait_expired' } },
    });
    o.complete(IMPORT.finish, { applied: 1, failed: 0, outcome_unknown: 0, skipped: 2, pending: 0 });
    const end = await o.run();
    expect(end.output).toMatchObject({
      state: 'failed',
      error: { code: 'admin_wait_expired' },
      counts: { skipped: 2 },
    });
  });

  it('the admin it was accepted under: named to every apply and session check; another admin signed in keeps it waiting', async () => {
    const since = new Date(START).toISOString();
    const o = run(
      input({ person: 'admin', waiting: { since, reason: 'refresh refused' }, counts: counts(1, 2) }),
      START + SESSION_CHECK_MS,
    );
    let e = await o.run();
    expect(e.scheduled[0]).toMatchObject({ name: IMPORT.session, input: { person: 'admin' } });
    expect(e.customStatus).toMatchObject({
      state: 'waiting_for_admin',
      person: 'admin',
      waitingForAdmin: { person: 'admin', action: expect.stringMatching(/^admin, the admin this import/) },
    });
    o.complete(IMPORT.session, { ready: false, signedIn: 'auditor' });
    e = await o.run();
    expect(e.scheduled[0].kind).toBe('timer');
    const next = run((await (o.fireTimer(), o.run())).continuedAsNew, START + 2 * SESSION_CHECK_MS);
    await next.run();
    next.complete(IMPORT.session, { ready: true, signedIn: 'admin' });
    e = await next.run();
    expect(e.scheduled[0]).toMatchObject({ name: IMPORT.apply, input: { id: ID, person: 'admin' } });
  });

  it('the tenant unavailable: waiting_for_tenant, retried with growing pauses, the wait’s start kept; then completes', async () => {
    const o = run(input());
    await o.run();
    o.complete(IMPORT.apply, { counts: counts(1, 2), tenantUnavailable: 'HTTP 503 after 4 attempts' });
    let e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      name: IMPORT.waiting,
      input: { input: { waiting: { for: 'tenant' } } },
    });
    o.complete(IMPORT.waiting);
    e = await o.run();
    expect(e.customStatus).toMatchObject({
      state: 'waiting_for_tenant',
      waitingForTenant: {
        reason: 'HTTP 503 after 4 attempts',
        nextAttemptAt: new Date(START + tenantRetryMs(1)).toISOString(),
        until: new Date(START + 3_600_000).toISOString(),
      },
    });
    expect(e.scheduled[0]).toMatchObject({
      kind: 'timer',
      fireAt: new Date(START + tenantRetryMs(1)).toISOString(),
    });
    o.fireTimer();
    const next = (await o.run()).continuedAsNew as ReturnType<typeof input>;
    expect(next).toMatchObject({
      waiting: { for: 'tenant', attempts: 1, since: new Date(START).toISOString() },
    });
    // The next generation tries at once; still unavailable: a longer pause, no second alert record, same start.
    const second = run(next, START + tenantRetryMs(1));
    e = await second.run();
    expect(e.scheduled[0].name).toBe(IMPORT.apply);
    second.complete(IMPORT.apply, { counts: counts(1, 2), tenantUnavailable: 'HTTP 429 after 4 attempts' });
    e = await second.run();
    expect(e.scheduled[0]).toMatchObject({
      kind: 'timer',
      fireAt: new Date(START + tenantRetryMs(1) + tenantRetryMs(2)).toISOString(),
    });
    second.fireTimer();
    const third = run((await second.run()).continuedAsNew, START + tenantRetryMs(1) + tenantRetryMs(2));
    await third.run();
    third.complete(IMPORT.apply, { counts: counts(3, 0) });
    e = await third.run();
    expect(e.scheduled[0]).toMatchObject({ name: IMPORT.finish, input: { error: undefined } });
    expect(tenantRetryMs(2)).toBe(2 * tenantRetryMs(1));
    expect(tenantRetryMs(40)).toBe(15 * 60_000);
  });

  it('the tenant unavailable past IMPORTS_ADMIN_WAIT: failed with tenant_wait_expired, the rest skipped', async () => {
    const since = new Date(START).toISOString();
    const o = run(
      input({ waiting: { since, reason: 'HTTP 503', for: 'tenant', attempts: 6 }, counts: counts(1, 2) }),
      START + 3_600_000,
    );
    await o.run();
    o.complete(IMPORT.apply, { counts: counts(1, 2), tenantUnavailable: 'HTTP 503 after 4 attempts' });
    const e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      name: IMPORT.finish,
      input: { error: { code: 'tenant_wait_expired' } },
    });
  });

  it('an apply step superseded by another run of itself waits, then applies the rest', async () => {
    const o = run(input());
    await o.run();
    o.complete(IMPORT.apply, { counts: counts(1, 2), superseded: true });
    let e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      kind: 'timer',
      fireAt: new Date(START + SUPERSEDED_WAIT_MS).toISOString(),
    });
    o.fireTimer();
    e = await o.run();
    expect(e.scheduled[0].name).toBe(IMPORT.apply);
  });

  it('an apply activity that throws ends the import failed, with its summary', async () => {
    const o = run(input());
    await o.run();
    o.fail(IMPORT.apply, 'storage unavailable');
    const e = await o.run();
    expect(e.scheduled[0]).toMatchObject({
      name: IMPORT.finish,
      input: { error: { code: 'import_failed' } },
    });
    o.complete(IMPORT.finish, counts(0, 0));
    expect((await o.run()).output).toMatchObject({ state: 'failed' });
  });
});

const SDL = `
  type Query { x: Int }
  type Mutation { updateKpi(id: ID!, input: UpdateKpiInput!): Kpi! }
  input UpdateKpiInput { value: Float, note: String }
  type Kpi { id: ID! }
`;
const updateKpi = operationOf(
  'updateKpi',
  'mutation U($id: ID!, $input: UpdateKpiInput!) { updateKpi(id: $id, input: $input) { id } }',
);

describe('operations and their variables', () => {
  const schema = buildSchema(SDL);

  it('with the schema: types coerced as the server will, names of what is wrong', () => {
    expect(variableProblems(updateKpi, { id: 'k1', input: { value: 2.5 } }, schema)).toEqual([]);
    expect(variableProblems(updateKpi, { id: 'k1', input: { value: 'high' } }, schema).join()).toMatch(
      /\$input.*value/,
    );
    expect(variableProblems(updateKpi, { id: 'k1', input: { valu: 1 } }, schema).join()).toMatch(/valu/);
    expect(variableProblems(updateKpi, { id: 'k1' }, schema).join()).toMatch(/\$input/);
    expect(variableProblems(updateKpi, { id: 'k1', input: {}, other: 1 }, schema)).toEqual([
      '$other: not a variable of updateKpi (it declares $id, $input)',
    ]);
  });

  it('without the schema (introspection refused): what the document declares', () => {
    expect(variableProblems(updateKpi, { id: 'k1', input: { anything: 1 } })).toEqual([]);
    expect(variableProblems(updateKpi, { id: 1.5, input: {} })).toEqual(['$id: must be an ID']);
    expect(variableProblems(updateKpi, { input: null })).toEqual(['$id: required', '$input: required']);
  });

  it('an operation that does not fit the schema is named', () => {
    const wrong = operationOf('setThing', 'mutation S($id: ID!) { setThing(id: $id) { id } }');
    expect(schemaProblems(wrong, schema).join()).toMatch(/setThing/);
    expect(schemaProblems(updateKpi, schema)).toEqual([]);
  });

  it('a tenant schema graphql-js calls invalid (a type without fields) refuses no operation, and the variables are still checked', () => {
    const invalid = buildSchema(
      'type Leeg type Kpi { id: ID! value: Float } input UpdateKpiInput { value: Float } type Query { kpi: Kpi leeg: Leeg } type Mutation { updateKpi(id: ID!, input: UpdateKpiInput!): Kpi }',
    );
    expect(() => schemaProblems(updateKpi, invalid)).not.toThrow();
    expect(schemaProblems(updateKpi, invalid)).toEqual([]);
    expect(variableProblems(updateKpi, { id: 'k1', input: { valu: 1 } }, invalid).join()).toMatch(/valu/);
  });

  it('the allow-list file: refused by name when it is not one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ops-'));
    const file = join(dir, 'ops.json');
    await writeFile(
      file,
      JSON.stringify({ operations: { setScore: { document: 'mutation S($v: Int!) { setScore(v: $v) }' } } }),
    );
    expect([...(await loadOperations(file, { builtIns: false })).keys()]).toEqual(['setScore']);
    await writeFile(file, JSON.stringify({ operations: { q: 'query Q { x }' } }));
    await expect(loadOperations(file, { builtIns: false })).rejects.toThrow(
      /operation q: the document must hold exactly one mutation/,
    );
    await writeFile(file, JSON.stringify({ operations: { bad: 'mutation {' } }));
    await expect(loadOperations(file, { builtIns: false })).rejects.toThrow(
      /operation bad: the document does not parse/,
    );
    await writeFile(file, '{');
    await expect(loadOperations(file, { builtIns: false })).rejects.toThrow(/not valid JSON/);
    await expect(loadOperations(join(dir, 'missing.json'), { builtIns: false })).rejects.toThrow(
      /cannot read .*ENOENT/,
    );
    expect([...(await loadOperations(undefined, { builtIns: true })).keys()]).toEqual([
      'updateKpi',
      'updateControl',
    ]);
    // Outside development without a file, nothing may write.
    await expect(loadOperations(undefined, { builtIns: false })).rejects.toMatchObject({
      code: 'imports_disabled',
      message: expect.stringContaining('IMPORT_OPERATIONS_FILE'),
    });
  });

  it('a body of many wrong items: the first 50 problems named, then checking stops', () => {
    const operations = new Map([['updateKpi', updateKpi]]);
    const items = Array.from({ length: 1000 }, (_, i) => ({
      key: `k${i}`,
      variables: { id: 'a', input: { value: 'x' } },
    }));
    const p = parseImportRequest(JSON.stringify({ operation: 'updateKpi', items }), {
      operations,
      maxItems: 1000,
      development: false,
      schema,
    });
    expect(p.ok).toBe(false);
    const problems = p.ok ? [] : p.problems;
    expect(problems).toHaveLength(51);
    expect(problems[0]).toMatch(/^items\.0\.variables \(key "k0"\): \$input/);
    expect(problems[50]).toBe('… and more (checking stopped after the first 50 problems)');
  });

  it('the same request in another key order hashes the same; another value does not', () => {
    const operations = new Map([['updateKpi', updateKpi]]);
    const parse = (text: string) => {
      const p = parseImportRequest(text, { operations, maxItems: 10, development: false, schema });
      if (!p.ok) throw new Error(p.problems.join());
      return importHash(p.value);
    };
    const a = parse(
      '{"operation":"updateKpi","items":[{"key":"1","variables":{"id":"k","input":{"value":1}}}]}',
    );
    const b = parse(
      '{"items":[{"variables":{"input":{"value":1},"id":"k"},"key":"1"}],"operation":"updateKpi"}',
    );
    const c = parse(
      '{"operation":"updateKpi","items":[{"key":"1","variables":{"id":"k","input":{"value":2}}}]}',
    );
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });
});

describe('what an item’s answer proves', () => {
  const endpoint = 'https://tenant.example/graphql';
  const refused = (data: unknown) =>
    new GraphqlErrors('UpdateKpi', [{ message: 'KPI is locked' }], data, { upstreamStatus: 200 });

  it.each([
    ['data beside errors: it ran — applied, the words kept', refused({ updateKpi: { id: 'k' } }), 'applied'],
    ['a root field null beside errors: unknown', refused({ updateKpi: null }), 'outcome_unknown'],
    ['errors without data: refused', refused(null), 'failed'],
    ['an answer lost after sending', new OutcomeUnknown(endpoint, 'reset'), 'outcome_unknown'],
    [
      'an HTTP 4xx without a GraphQL result',
      new UpstreamError('upstream_rejected', endpoint, '400'),
      'failed',
    ],
    [
      'an answer that did not parse',
      new UpstreamError('upstream_malformed', endpoint, 'x'),
      'outcome_unknown',
    ],
    ['anything unexpected', new Error('boom'), 'outcome_unknown'],
    ['a document this client will not send', new RequestRefused('invalid_document', 'x'), 'failed'],
  ])('%s', (_, err, state) => {
    const sent = sentAs(3, err);
    expect('outcome' in sent && sent.outcome.state).toBe(state);
    if (state === 'applied') expect(sent).toMatchObject({ outcome: { message: 'KPI is locked' } });
    if (state === 'outcome_unknown') expect(sent).toMatchObject({ outcome: { code: 'outcome_unknown' } });
  });

  it.each([
    ['a lost session', 'admin', new LoginRequired('refresh refused')],
    [
      '401 with a fresh token',
      'admin',
      new UpstreamError('upstream_rejected', endpoint, '401', { unsent: true }),
    ],
    [
      '429 or 503 past the retries',
      'tenant',
      new UpstreamError('upstream_unavailable', endpoint, '503', { unsent: true }),
    ],
  ])('not sent — %s: the import pauses for the %s, the item stays pending', (_, pause, err) => {
    expect(sentAs(3, err)).toMatchObject({ pause });
  });
});

describe('the body’s bounds, on its text before any parse', () => {
  const bounds = (over: Partial<Parameters<typeof boundsProblems>[1]> = {}) => ({
    maxItems: 3,
    maxItemBytes: MAX_ITEM_BYTES,
    maxDepth: MAX_DEPTH,
    maxKeptNames: 5,
    declaredVariables: (op?: string) =>
      op === 'updateKpi'
        ? { count: 2, names: new Set(['id', 'input']) }
        : op === undefined
          ? undefined
          : { count: 5 },
    ...over,
  });
  const body = (items: unknown[], extra = '') =>
    `{"operation":"updateKpi",${extra}"items":${JSON.stringify(items)}}`;
  const item = (variables: Record<string, unknown>, key = 'k') => ({ key, variables });

  it('a body within them says nothing, whatever its key order or spacing', () => {
    expect(boundsProblems(body([item({ id: 'a', input: { value: 1 } })]), bounds())).toEqual([]);
    expect(
      boundsProblems(
        '{ "items" : [ { "variables" : { "id" : "a\\"}", "input" : {} } , "key" : "k" } ] , "operation" : "updateKpi" }',
        bounds(),
      ),
    ).toEqual([]);
    expect(boundsProblems('{not json', bounds())).toEqual([]);
  });

  it('too many items, scalars counted too', () => {
    expect(boundsProblems(body([1, 2, 3, 4]), bounds())).toEqual([
      'items: at most 3 items (IMPORTS_MAX_ITEMS)',
    ]);
    expect(boundsProblems(body([{}, {}, {}, {}]), bounds())).toHaveLength(1);
  });

  it('an item too long, in UTF-8 bytes (escapes and non-ASCII counted as sent)', () => {
    const long = item({ id: 'x'.repeat(MAX_ITEM_BYTES) });
    expect(boundsProblems(body([item({ id: 'a' }), long]), bounds())[0]).toMatch(
      /^items\.1: \d+ bytes; an item may be at most 8192$/,
    );
    const euros = item({ id: '€'.repeat(2800) }); // 8 400 bytes in UTF-8, 2 800 characters
    expect(boundsProblems(body([euros]), bounds())).toHaveLength(1);
    expect(boundsProblems(body([item({ id: '€'.repeat(2600) })]), bounds())).toEqual([]);
  });

  it('nesting deeper than allowed, anywhere', () => {
    const deep = '['.repeat(MAX_DEPTH + 1) + ']'.repeat(MAX_DEPTH + 1);
    expect(
      boundsProblems(`{"operation":"updateKpi","items":[{"key":"k","variables":{"id":${deep}}}]}`, bounds()),
    ).toEqual([`body: nested deeper than ${MAX_DEPTH} levels`]);
    expect(boundsProblems('['.repeat(100_000), bounds())).toHaveLength(1);
  });

  it('more variables in an item than its operation declares (the most any allowed one declares, for another name)', () => {
    expect(
      boundsProblems(body([item({ id: 1, input: 2 }), item({ id: 1, input: 2, c: 3 })]), bounds()),
    ).toEqual(['items.1.variables: $c: not a variable of updateKpi (it declares $id, $input; 3 given)']);
    // Half a million undeclared variables: named by the first, the others never read as names.
    const huge = `{${Array.from({ length: 500_000 }, (_, i) => `"v${i}":0`).join(',')}}`;
    expect(
      boundsProblems(`{"operation":"updateKpi","items":[{"key":"k","variables":${huge}}]}`, {
        ...bounds(),
        maxItemBytes: 64 * 1024 * 1024,
      }),
    ).toEqual([
      'items.0.variables: $v0: not a variable of updateKpi (it declares $id, $input; 500000 given)',
    ]);
    // Nested keys are not variables.
    expect(boundsProblems(body([item({ id: 'a', input: { a: 1, b: 2, c: 3 } })]), bounds())).toEqual([]);
    const other = `{"operation":"dropTables","items":[${JSON.stringify(item({ a: 1, b: 2, c: 3 }))}]}`;
    expect(boundsProblems(other, bounds())).toEqual([]);
    const many = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`v${i}`, i]));
    expect(boundsProblems(other.replace('{"a":1,"b":2,"c":3}', JSON.stringify(many)), bounds())).toHaveLength(
      1,
    );
  });

  // What JSON.parse reads is what the bounds read: an escaped key is its decoded name, and a key JSON.parse would
  // take from a second occurrence is refused rather than read twice.
  const huge = `{${Array.from({ length: 100_000 }, (_, i) => `"v${i}":0`).join(',')}}`;
  const hostile = `[{"key":"k","variables":${huge}}]`;
  const wide = { ...bounds(), maxItemBytes: 64 * 1024 * 1024 };

  it('an escaped key is read as its name: `it\\u0065ms`, an escaped `variables`, escaped variable names', () => {
    const escapedItems = `{"operation":"updateKpi","it\\u0065ms":${hostile}}`;
    expect(JSON.parse(escapedItems)).toHaveProperty('items');
    expect(boundsProblems(escapedItems, wide)).toEqual([
      'items.0.variables: $v0: not a variable of updateKpi (it declares $id, $input; 100000 given)',
    ]);
    const escapedVariables = `{"operation":"updateKpi","items":[{"key":"k","v\\u0061riables":${huge}}]}`;
    expect(boundsProblems(escapedVariables, wide)).toHaveLength(1);
    // Escaped names of declared variables are the variables themselves: nothing to say.
    expect(
      boundsProblems(
        `{"operation":"upd\\u0061teKpi","items":[{"key":"k","variables":{"\\u0069d":1,"input":{}}}]}`,
        wide,
      ),
    ).toEqual([]);
    // An escape JSON does not know is left to the parse, which refuses it.
    expect(boundsProblems('{"it\\qems":[]}', wide)).toEqual([]);
  });

  it('a repeated `items`, `operation` or `variables` is refused: JSON.parse would keep the one read last', () => {
    expect(boundsProblems(`{"operation":"updateKpi","items":[],"items":${hostile}}`, wide)).toEqual([
      'body: "items" given twice',
    ]);
    expect(boundsProblems(`{"items":[],"operation":"updateKpi","it\\u0065ms":[]}`, wide)).toEqual([
      'body: "items" given twice',
    ]);
    expect(boundsProblems(`{"operation":"updateKpi","operation":"x","items":[]}`, wide)).toEqual([
      'body: "operation" given twice',
    ]);
    expect(
      boundsProblems(
        `{"operation":"updateKpi","items":[{"key":"k","variables":{},"variables":${huge}}]}`,
        wide,
      ),
    ).toEqual(['items.0: "variables" given twice']);
    // Each item has its own: one each is fine; nested keys of the same name are values, not repeats.
    expect(
      boundsProblems(
        body([item({ id: 'a', input: { variables: 1, items: 2 } }), item({ id: 'b', input: {} })]),
        bounds(),
      ),
    ).toEqual([]);
  });
});
