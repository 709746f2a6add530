import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { BUILT_IN_OPERATIONS } from '../../shared/imports/operations';
import { LocalFileSecretStore } from '../../shared/secrets';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';

jest.setTimeout(120_000);

/*
 * Who may write, outside development (no AZURE_FUNCTIONS_ENVIRONMENT): imports are off until IMPORT_OPERATIONS_FILE
 * names what they may run, and with IMPORTS_REQUEST_SECRET_NAME only a signed request is taken. Each a stack of its
 * own: the real app on the local host, the sandbox, Azurite.
 */
const item = { key: 'row-1', variables: { id: 'kpi-0000001', input: { value: 7.5 } } };
const postImport = (stack: Stack, body: unknown, headers: Record<string, string> = {}) =>
  stack.json(
    'imports',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    },
    stack.keys.function,
  );
const mutations = async (stack: Stack) => (await stack.sb.hook('stats')).body.graphql.mutations as number;

async function signIn(stack: Stack) {
  const r = await stack.json('manage/device-login?force=true', { method: 'POST' }, stack.keys.master);
  await stack.sb.hook('device/approve', { userCode: r.body.userCode, username: 'admin' });
  await stack.advance(5);
  await eventually(
    async () =>
      (await stack.json(`manage/device-login/${r.body.id}`, {}, stack.keys.master)).body.state ===
      'authorised',
    'the admin to be signed in',
  );
}

describe('outside development without IMPORT_OPERATIONS_FILE', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await stackFixture({ sandbox: { records: 5 } });
    await signIn(stack);
  });
  afterAll(() => stack?.close());

  it('imports are off: 403 imports_disabled naming the setting, before anything is read or sent; doctor says so', async () => {
    const r = await postImport(stack, { operation: 'updateKpi', items: [item] });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body).toMatchObject({
      code: 'imports_disabled',
      detail: expect.stringContaining('IMPORT_OPERATIONS_FILE'),
    });
    // Even a body that is not JSON: nothing of it matters while imports are off.
    expect((await postImport(stack, '{not json')).body.code).toBe('imports_disabled');
    expect(await mutations(stack)).toBe(0);
    const doctor = await stack.json('manage/doctor', {}, stack.keys.master);
    const check = doctor.body.checks.find((c: { found: string }) => /imports are off/.test(c.found));
    expect(check).toMatchObject({ state: 'warn', action: expect.stringContaining('IMPORT_OPERATIONS_FILE') });
    // The admin page's session says what a signed-in admin enables: nothing here.
    expect((await stack.json('manage/session', {}, stack.keys.master)).body.importOperations).toBeNull();
  });
});

describe('with IMPORT_OPERATIONS_FILE and IMPORTS_REQUEST_SECRET_NAME', () => {
  let stack: Stack;
  const SECRET = `whsec_${Buffer.from('import-callers-share-this-secret').toString('base64')}`;
  const signed = (body: string, secret = SECRET) => {
    const id = `msg_${Math.random().toString(36).slice(2)}`;
    const timestamp = new Date();
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, timestamp, body),
    };
  };

  beforeAll(async () => {
    const dir = (await import('node:os')).tmpdir();
    const file = join(dir, `ops-${process.pid}-${Date.now()}.json`);
    await writeFile(file, JSON.stringify({ operations: { setKpi: BUILT_IN_OPERATIONS.updateKpi.document } }));
    stack = await stackFixture({
      sandbox: { records: 5 },
      env: { IMPORT_OPERATIONS_FILE: file, IMPORTS_REQUEST_SECRET_NAME: 'import-request-secret' },
    });
    await new LocalFileSecretStore(stack.secretsFile).set('import-request-secret', SECRET);
    await signIn(stack);
  });
  afterAll(() => stack?.close());

  it('an unsigned or wrongly signed request: 401 invalid_signature, its body never looked at', async () => {
    const body = JSON.stringify({ operation: 'setKpi', items: [item] });
    const unsigned = await postImport(stack, body);
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toMatchObject({
      code: 'invalid_signature',
      detail: expect.stringContaining('signature'),
    });
    const other = `whsec_${Buffer.from('somebody-else-s-secret-0000000').toString('base64')}`;
    expect((await postImport(stack, body, signed(body, other))).status).toBe(401);
    // Signed for another body.
    expect((await postImport(stack, body, signed(body.replace('7.5', '8.5')))).status).toBe(401);
    expect((await postImport(stack, '{not json', {})).status).toBe(401);
    expect(await mutations(stack)).toBe(0);
  });

  it('signed: only the file’s operations (the sandbox’s built-ins are not loaded), then 202 and applied once', async () => {
    const builtIn = JSON.stringify({ operation: 'updateKpi', items: [item] });
    const refused = await postImport(stack, builtIn, signed(builtIn));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'unknown_operation', knownOperations: ['setKpi'] });
    const body = JSON.stringify({ operation: 'setKpi', items: [item] });
    const r = await postImport(stack, body, signed(body));
    expect(r.status).toBe(202);
    const done = await eventually(async () => {
      const s = await stack.json(`imports/${r.body.id}`, {}, stack.keys.function);
      return ['completed', 'failed'].includes(s.body.state) && s.body;
    }, 'the import to end');
    expect(done).toMatchObject({ state: 'completed', person: 'admin', counts: { applied: 1 } });
    expect((await stack.json('manage/session', {}, stack.keys.master)).body.importOperations).toEqual([
      'setKpi',
    ]);
    expect(await mutations(stack)).toBe(1);
  });

  it('a signed request sent again within the signature’s tolerance names the import it started — whatever Idempotency-Key it now carries', async () => {
    const before = await mutations(stack);
    const body = JSON.stringify({
      operation: 'setKpi',
      items: [{ key: 'replayed', variables: { id: 'kpi-0000002', input: { value: 3.25 } } }],
    });
    const headers = signed(body);
    const first = await postImport(stack, body, headers);
    expect(first.status).toBe(202);
    // Captured and sent again — as it is, and with a fresh Idempotency-Key (the header the signature does not cover).
    for (const extra of [{}, { 'idempotency-key': 'a-new-key-from-someone-else' }] as Record<
      string,
      string
    >[]) {
      const again = await postImport(stack, body, { ...headers, ...extra });
      expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([
        202,
        first.body.id,
        'true',
      ]);
    }
    await eventually(async () => {
      const s = await stack.json(`imports/${first.body.id}`, {}, stack.keys.function);
      return s.body.state === 'completed';
    }, 'the import to end');
    // Once: one import, one mutation; the replays started nothing.
    expect((await mutations(stack)) - before).toBe(1);
    const imports = (await stack.json('manage/runs?kind=import', {}, stack.keys.master)).body.runs as Array<{
      id: string;
    }>;
    expect(imports.filter((r) => r.id === first.body.id)).toHaveLength(1);
    expect(imports).toHaveLength(2);
  });
});
