import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { LocalFileSecretStore } from '../../shared/secrets';
import { stackFixture, type Stack } from '../helpers/stack';

// Malformed bodies, headers and keys thrown at POST /api/exports through the local host: whatever comes in,
// the answer is 202 or a 4xx with a reason — never a 5xx, never a stack trace. Bounded: a fixed number of runs.

let stack: Stack;
const SECRET = `whsec_${Buffer.from('export-callers-share-this-secret').toString('base64')}`;

beforeAll(async () => {
  // One slot, so accepted requests soon meet the cap (429) instead of piling up exports; callers must sign.
  stack = await stackFixture({
    sandbox: { records: 5 },
    env: { EXPORTS_MAX_CONCURRENT: '1', EXPORTS_REQUEST_SECRET_NAME: 'export-request-secret' },
  });
  await new LocalFileSecretStore(stack.secretsFile).set('export-request-secret', SECRET);
}, 60_000);
afterAll(() => stack?.close());

/** Header values fetch can send (no CR/LF, Latin-1), trimmed as HTTP trims them. */
const headerValue = fc
  .string({ unit: 'binary', maxLength: 300 })
  .map((s) => s.replace(/[^\t\x20-\x7e\x80-\xff]/g, '').trim());

const jsonValue = fc.jsonValue({ maxDepth: 3 });
const field = fc.constantFrom('streams', 'format', 'gzip', 'callbackUrl');
const bodyObject = fc.dictionary(fc.oneof(field, fc.string({ maxLength: 12 })), jsonValue, { maxKeys: 5 });
const plausible = fc.record(
  {
    streams: fc.oneof(
      fc.array(fc.constantFrom('controls', 'users', 'kpis', 'nope', ''), { maxLength: 4 }),
      jsonValue,
    ),
    format: fc.oneof(fc.constantFrom('ndjson', 'csv', 'json', 'xml', ''), jsonValue),
    gzip: fc.oneof(fc.boolean(), jsonValue),
    callbackUrl: fc.oneof(
      fc.constantFrom(
        'https://example.com/hook',
        'http://example.com/hook',
        'https://169.254.169.254/',
        'https://[::ffff:169.254.169.254]/',
        'https://10.0.0.1/x',
        'https://localhost/x',
        'ftp://x',
        'not a url',
      ),
      fc.webUrl(),
      jsonValue,
    ),
  },
  { requiredKeys: [] },
);

const body = fc.oneof(
  plausible.map((o) => JSON.stringify(o)),
  bodyObject.map((o) => JSON.stringify(o)),
  jsonValue.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.constant(''),
);

const request = fc.record({
  body,
  contentType: fc.option(
    fc.oneof(
      fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/cloudevents+json',
      ),
      headerValue,
    ),
    { nil: undefined },
  ),
  idempotencyKey: fc.option(headerValue, { nil: undefined }),
  key: fc.oneof(fc.constant('function'), fc.constant('master'), headerValue),
  // Mostly a valid signature of the body, so the checks behind it are reached too.
  signature: fc.oneof(
    { weight: 3, arbitrary: fc.constant('valid' as const) },
    fc.constant(undefined),
    fc.tuple(headerValue, headerValue, headerValue),
  ),
});

it('answers 202 or a 4xx with a reason to any body, headers and keys — never a 5xx', async () => {
  const seen = new Set<number>();
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      const headers: Record<string, string> = {};
      if (r.contentType !== undefined) headers['content-type'] = r.contentType;
      if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
      if (r.signature === 'valid') {
        const id = `msg_${Math.random().toString(36).slice(2)}`;
        const now = new Date();
        headers['webhook-id'] = id;
        headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
        headers['webhook-signature'] = new Webhook(SECRET).sign(id, now, r.body);
      } else if (r.signature) {
        headers['webhook-id'] = r.signature[0];
        headers['webhook-timestamp'] = r.signature[1];
        headers['webhook-signature'] = r.signature[2];
      }
      const key = r.key === 'function' ? stack.keys.function : r.key === 'master' ? stack.keys.master : r.key;
      const res = await stack.json('exports', { method: 'POST', headers, body: r.body }, key || null);
      seen.add(res.status);
      expect(res.status === 202 || (res.status >= 400 && res.status < 500)).toBe(true);
      expect(res.text).not.toMatch(/\bat .+\.(js|ts):\d+/);
      // Every refusal (but the host's bare 401 for a missing key) is an RFC 9457 problem document.
      if (res.status !== 202 && res.status !== 401) {
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.body).toMatchObject({
          type: expect.stringMatching(/^urn:/),
          title: expect.any(String),
          status: res.status,
          detail: expect.any(String),
          code: expect.any(String),
        });
      }
    }),
    { numRuns: 150, seed: 20261122 },
  );
  // The generator reached both sides of the route.
  expect(seen.has(202)).toBe(true);
  expect(seen.has(400)).toBe(true);
  expect(seen.has(401)).toBe(true);
}, 120_000);
