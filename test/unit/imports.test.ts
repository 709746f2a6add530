import { readdirSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import { IMPORT, importInstanceId, SESSION_CHECK_MS } from '../../shared/imports/orchestration';
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
const counts = (applied: number, pending: number, failed = 0) => ({ applied, failed, skipped: 0, pending });
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
    o.complete(IMPORT.finish, { applied: 1, failed: 0, skipped: 2, pending: 0 });
    const end = await o.run();
    expect(end.output).toMatchObject({
      state: 'failed',
      error: { code: 'admin_wait_expired' },
      counts: { skipped: 2 },
    });
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

  it('the allow-list file: refused by name when it is not one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ops-'));
    const file = join(dir, 'ops.json');
    await writeFile(
      file,
      JSON.stringify({ operations: { setScore: { document: 'mutation S($v: Int!) { setScore(v: $v) }' } } }),
    );
    expect([...(await loadOperations(file)).keys()]).toEqual(['setScore']);
    await writeFile(file, JSON.stringify({ operations: { q: 'query Q { x }' } }));
    await expect(loadOperations(file)).rejects.toThrow(
      /operation q: the document must hold exactly one mutation/,
    );
    await writeFile(file, JSON.stringify({ operations: { bad: 'mutation {' } }));
    await expect(loadOperations(file)).rejects.toThrow(/operation bad: the document does not parse/);
    await writeFile(file, '{');
    await expect(loadOperations(file)).rejects.toThrow(/not valid JSON/);
    await expect(loadOperations(join(dir, 'missing.json'))).rejects.toThrow(/cannot read .*ENOENT/);
    expect([...(await loadOperations()).keys()]).toEqual(['updateKpi', 'updateControl']);
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
