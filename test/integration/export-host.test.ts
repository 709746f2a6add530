import { createHash } from 'node:crypto';
import { request } from 'node:https';
import type { PublicFile } from '../../shared/exports/reply';
import { LocalFileSecretStore } from '../../shared/secrets';
import { readExportFile } from '../helpers/export-file';
import { eventually } from '../helpers/host';
import { stackFixture, type Stack } from '../helpers/stack';
import { webhookReceiver } from '../helpers/webhook-receiver';

// Through the local host (a stand-in for the Functions host, which cannot run here) against the sandbox and
// Azurite over HTTPS with OAuth: the links are real user-delegation SAS, downloaded from Azurite.

let stack: Stack;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
const RECORDS = 40;

beforeAll(async () => {
  stack = await stackFixture({
    sandbox: { records: RECORDS },
    env: { AZURE_FUNCTIONS_ENVIRONMENT: 'Development', EXPORTS_MAX_CONCURRENT: '2' },
  });
  const { caFile, keyFile } = stack.azurite;
  // The receiver presents the stack's certificate, which the host trusts (as a real https endpoint).
  receiver = await webhookReceiver(undefined, {
    tls: { certFile: caFile as string, keyFile: keyFile as string },
    path: '/hooks/exports',
  });
  await new LocalFileSecretStore(stack.secretsFile).set('downstream-webhook-secret', receiver.secret);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

/** A GET over HTTPS trusting the stack's certificate (what a downloader with that CA does). */
function download(url: string, method = 'GET'): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca: stack.azurite.ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (method === 'PUT') req.setHeader('x-ms-blob-type', 'BlockBlob');
    req.end(method === 'PUT' ? 'overwritten' : undefined);
  });
}

const post = (
  body: unknown,
  headers: Record<string, string> = {},
  key: string | null = stack.keys.function,
) =>
  stack.json(
    'exports',
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    },
    key,
  );

const status = (id: string) => stack.json(`exports/${id}`, {}, stack.keys.function);

async function finished(id: string) {
  return eventually(
    async () => {
      const s = await status(id);
      return ['completed', 'failed'].includes(s.body?.status) && s.body.callback?.status !== 'pending' && s;
    },
    `export ${id} to finish`,
    60_000,
  );
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('POST /api/exports → GET /api/exports/{id} → download', () => {
  it.each([
    ['ndjson', false],
    ['csv', false],
    ['json', false],
    ['csv', true],
  ] as const)(
    '%s (gzip %s): 202, progress, then links whose downloads match the manifest',
    async (format, gzip) => {
      const res = await post({ streams: ['controls', 'users'], format, gzip });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ id: expect.any(String), status: 'queued', statusUrl: expect.any(String) });
      expect(res.headers.get('location')).toBe(`${stack.apiBaseUrl}/exports/${res.body.id}`);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);

      const done = await finished(res.body.id);
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('completed');
      expect(done.body.progress).toEqual({ streamsDone: 2, streamsTotal: 2 });
      // Never the durable management URLs or any key.
      expect(done.text).not.toMatch(/runtime\/webhooks|code=|system-key|function-key|master-key/);

      const files = done.body.files as PublicFile[];
      expect(files.map((f) => f.file)).toEqual([
        `controls.${format}${gzip ? '.gz' : ''}`,
        `users.${format}${gzip ? '.gz' : ''}`,
      ]);
      const manifest = JSON.parse((await download(done.body.manifestUrl)).body.toString('utf8'));
      expect(manifest.files).toEqual(
        files.map(({ stream, file, records, bytes, sha256: h }) => ({
          stream,
          file,
          records,
          bytes,
          sha256: h,
        })),
      );
      for (const f of files) {
        expect(f.records).toBe(RECORDS);
        const expires = Date.parse(f.expiresAt as string) - Date.now();
        expect(expires).toBeGreaterThan(13 * 60_000);
        expect(expires).toBeLessThanOrEqual(15 * 60_000 + 5_000);
        const got = await download(f.url as string);
        expect(got.status).toBe(200);
        expect(got.body.length).toBe(f.bytes);
        expect(sha256(got.body)).toBe(f.sha256);
        const read = readExportFile(got.body, String(format), Boolean(gzip));
        expect(read.records).toBe(RECORDS);
        if (format === 'csv') expect(read.header?.split(',')[0]).toBe('id');
        // Read-only and for that blob alone.
        expect((await download(f.url as string, 'PUT')).status).toBe(403);
        expect((await download((f.url as string).replace(f.file, 'other.ndjson'))).status).toBe(403);
      }
    },
  );

  it('exports every stream when the body is empty', async () => {
    const res = await stack.json('exports', { method: 'POST' }, stack.keys.function);
    expect(res.status).toBe(202);
    const done = await finished(res.body.id);
    expect(done.body.streams.map((s: { name: string }) => s.name)).toEqual([
      'controls',
      'evidence',
      'personnel',
      'kpis',
      'reports',
      'users',
    ]);
    expect(done.body.streams.every((s: { status: string }) => s.status === 'completed')).toBe(true);
  });

  it('a stream failing upstream fails the export and says why; no links', async () => {
    await stack.sb.hook('faults', { route: 'graphql', status: 400, count: 1 });
    const res = await post({ streams: ['kpis'] });
    const done = await finished(res.body.id);
    expect(done.body.status).toBe('failed');
    expect(done.body.error).toMatch(/kpis: .*400/);
    expect(done.body.streams[0]).toMatchObject({ name: 'kpis', status: 'failed' });
    expect(done.body.files).toBeUndefined();
  });

  it('a malformed %-encoding in the path is a 400, not a 500', async () => {
    expect((await stack.api('exports/%E0%A4%A', {}, stack.keys.function)).status).toBe(400);
  });

  it('the key the host checks is the key idempotency is scoped by: the header wins over ?code=, as in Azure', async () => {
    // A valid ?code= does not rescue a wrong header key: the host reads the header first.
    const wrongHeader = await fetch(`${stack.apiBaseUrl}/exports?code=${stack.keys.function}`, {
      method: 'POST',
      headers: { 'x-functions-key': 'not-a-key', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(wrongHeader.status).toBe(401);
    // The same header key with different ?code= values is one caller: the key replays the same export.
    const key = `scope-${Date.now()}`;
    const send = (code: string) =>
      fetch(`${stack.apiBaseUrl}/exports?code=${code}`, {
        method: 'POST',
        headers: {
          'x-functions-key': stack.keys.function,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ streams: ['kpis'] }),
      });
    const first = await send('junk-1');
    expect(first.status).toBe(202);
    const firstId = ((await first.json()) as { id: string }).id;
    const second = await send('junk-2');
    expect(second.status).toBe(202); // started before the first answered: a replay, not a new export
    expect(((await second.json()) as { id: string }).id).toBe(firstId);
    await finished(firstId);
  });

  it('unknown ids: 404; ids we never issue: 400', async () => {
    expect((await status('4b0e9d1c-3f7a-4c2e-9a51-0d3c2b1a0f99')).status).toBe(404);
    expect((await status('not-an-id')).status).toBe(400);
  });
});

describe('bad requests get a 4xx naming the problem', () => {
  it('names each problem in the body', async () => {
    const res = await post({ format: 'xml', gzip: 'yes', extra: 1 });
    expect(res.status).toBe(400);
    expect(res.body.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^format: must be one of ndjson, csv, json/),
        expect.stringMatching(/^gzip: must be true or false/),
        expect.stringMatching(/extra/),
      ]),
    );
  });

  it('an unknown stream lists the known ones', async () => {
    const res = await post({ streams: ['controls', 'invoices'] });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(
      /unknown stream "invoices"; known: controls, evidence, personnel, kpis, reports, users/,
    );
    expect(res.body.knownStreams).toContain('users');
  });

  it.each([
    ['not JSON', 400, '{"streams": [', {}],
    ['not JSON content', 415, '{}', { 'content-type': 'text/plain' }],
    ['too large', 413, JSON.stringify({ streams: ['x'.repeat(20_000)] }), {}],
    ['a bad Idempotency-Key', 400, '{}', { 'idempotency-key': 'x'.repeat(300) }],
  ])('%s → %d', async (_what, code, body, headers) => {
    const res = await post(body, headers as Record<string, string>);
    expect(res.status).toBe(code);
    expect(res.body.code).toBeTruthy();
    expect(res.text).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('refuses callbacks that are not https or point at link-local addresses, even in development', async () => {
    const plain = await post({ callbackUrl: 'http://example.com/hook' });
    expect(plain.status).toBe(400);
    expect(plain.body.problems).toEqual(['callbackUrl: must be an https URL']);
    const metadata = await post({ callbackUrl: 'https://169.254.169.254/latest' });
    expect(metadata.status).toBe(400);
    expect(metadata.body.problems[0]).toMatch(/callbackUrl: refused: 169\.254\.169\.254 is a link-local/);
  });

  it('no key: 401 before anything is read', async () => {
    expect((await post({}, {}, null)).status).toBe(401);
  });
});

describe('Idempotency-Key', () => {
  it('same key and body → the same export; another body → 422; another caller → its own export', async () => {
    const key = `idem-${Date.now()}`;
    const first = await post({ streams: ['reports'] }, { 'idempotency-key': key });
    expect(first.status).toBe(202);
    const again = await post({ format: 'ndjson', streams: ['reports'] }, { 'idempotency-key': key });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await post({ streams: ['users'] }, { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    // The master key is another caller: its keys are its own.
    const otherCaller = await post({ streams: ['reports'] }, { 'idempotency-key': key }, stack.keys.master);
    expect(otherCaller.status).toBe(202);
    expect(otherCaller.body.id).not.toBe(first.body.id);
    await finished(first.body.id);
    await finished(otherCaller.body.id);
    // After it finished, the same key still names the same export (kept 24 h).
    const later = await post({ streams: ['reports'] }, { 'idempotency-key': key });
    expect(later.body).toMatchObject({ id: first.body.id, status: 'completed' });
  });
});

describe('concurrency cap', () => {
  it('beyond EXPORTS_MAX_CONCURRENT running exports: 429 with Retry-After; a slot frees when one ends', async () => {
    // Slow pages keep the first two running while the third is asked for.
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 1500, count: 4 });
    const a = await post({ streams: ['evidence'] });
    const b = await post({ streams: ['personnel'] });
    expect([a.status, b.status]).toEqual([202, 202]);
    const c = await post({ streams: ['users'] });
    expect(c.status).toBe(429);
    expect(Number(c.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(c.body.detail).toMatch(/2 exports are already running/);
    await finished(a.body.id);
    const d = await post({ streams: ['users'] });
    expect(d.status).toBe(202);
    await finished(b.body.id);
    await finished(d.body.id);
  });

  it('one Idempotency-Key raced while every slot is busy: never a 202 for an export that does not exist', async () => {
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 2500, count: 2 });
    const a = await post({ streams: ['evidence'] });
    const b = await post({ streams: ['personnel'] });
    expect([a.status, b.status]).toEqual([202, 202]);
    const key = `race-${Date.now()}`;
    const raced = await Promise.all(
      Array.from({ length: 20 }, () => post({ streams: ['users'] }, { 'idempotency-key': key })),
    );
    // Before the fix: 16 × 202 with one id that 404s. Now: 429 (no slot) or 409 (the key is being started).
    expect(raced.every((r) => [409, 429].includes(r.status))).toBe(true);
    expect(raced.filter((r) => r.status === 409).every((r) => Number(r.headers.get('retry-after')) > 0)).toBe(
      true,
    );
    for (const r of raced.filter((x) => x.status === 202)) expect((await status(r.body.id)).status).toBe(200);
    await finished(a.body.id);
    // The key was released with its refused request: the next request with it starts the export.
    const retried = await post({ streams: ['users'] }, { 'idempotency-key': key });
    expect(retried.status).toBe(202);
    expect((await status(retried.body.id)).status).toBe(200);
    await finished(b.body.id);
    await finished(retried.body.id);
  });

  it('an export terminated from outside frees its slot for the next request, and reads as failed', async () => {
    await stack.sb.hook('faults', { route: 'graphql', delayMs: 3000, count: 2 });
    const a = await post({ streams: ['evidence'] });
    const b = await post({ streams: ['personnel'] });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect((await post({ streams: ['users'] })).status).toBe(429);
    const terminated = await stack.api(
      `../runtime/webhooks/durabletask/instances/export-${a.body.id}/terminate?reason=operator`,
      { method: 'POST' },
      stack.keys.master,
    );
    expect(terminated.status).toBe(202);
    await eventually(async () => (await status(a.body.id)).body.status === 'failed', 'the terminated export');
    expect((await status(a.body.id)).body.error).toMatch(/stopped \(terminated\)/);
    const c = await post({ streams: ['users'] });
    expect(c.status).toBe(202);
    await finished(b.body.id);
    await finished(c.body.id);
  });
});

describe('signed callback', () => {
  it('POSTs the status body, signed the Standard Webhooks way, when done and when failed', async () => {
    const ok = await post({ streams: ['controls'], format: 'csv', callbackUrl: receiver.url });
    const done = await finished(ok.body.id);
    expect(done.body.callback).toEqual({ status: 'delivered' });
    await stack.sb.hook('faults', { route: 'graphql', status: 400, count: 1 });
    const bad = await post({ streams: ['kpis'], callbackUrl: receiver.url });
    const failed = await finished(bad.body.id);
    expect(failed.body.callback).toEqual({ status: 'delivered' });
    // The receiver verified each signature with `standardwebhooks` before keeping it.
    expect(receiver.rejected).toEqual([]);
    const completed = receiver.received.find((m) => m.data.id === ok.body.id);
    expect(completed?.type).toBe('export.completed');
    const file = (completed?.data.files as PublicFile[])[0];
    expect(file).toMatchObject({ stream: 'controls', file: 'controls.csv', records: RECORDS });
    expect((await download(file.url as string)).status).toBe(200);
    const failure = receiver.received.find((m) => m.data.id === bad.body.id);
    expect(failure?.type).toBe('export.failed');
    expect(failure?.data.error).toMatch(/kpis/);
    // Links are signed for the callback, never kept in the orchestration's history or status.
    const history = await stack.json(
      `../runtime/webhooks/durabletask/instances/export-${ok.body.id}?showHistory=true`,
      {},
      stack.keys.master,
    );
    expect(history.text).not.toMatch(/sig=/);
  });

  it('a receiver that refuses for good: the export stays completed, the callback failure is reported', async () => {
    receiver.failNext(1, 410);
    const res = await post({ streams: ['users'], callbackUrl: receiver.url });
    const done = await finished(res.body.id);
    expect(done.body.status).toBe('completed');
    expect(done.body.callback.status).toBe('failed');
    expect(done.body.callback.error).toMatch(/410/);
  });
});
