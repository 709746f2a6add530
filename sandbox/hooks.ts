import { z } from 'zod';
import { KINDS } from './data/generate';
import { faultSpecSchema } from './faults';
import { HttpError, json, mediaType, readJson, type Handler, type Request, type Router } from './http';
import { schemaEditProblem, type SchemaEdits } from './graphql';
import { findPerson } from './idp/people';
import { limitsSchema } from './limits';
import type { Sandbox } from './state';

/** Parses a hook body with zod; a 400 lists every problem with its path. */
async function parse<T>(req: Request, schema: z.ZodType<T>): Promise<T> {
  const result = schema.safeParse(await readJson(req));
  if (!result.success) {
    throw new HttpError(400, {
      error: 'invalid_request',
      error_description: result.error.issues
        .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
        .join('; '),
    });
  }
  return result.data;
}

const userCodeBody = z.object({ userCode: z.string().min(1) });
const approveBody = userCodeBody.extend({ username: z.string().min(1) });
const personBody = z.object({ username: z.string().min(1) });
const credentialBody = z.object({
  label: z.string().trim().min(1).max(100),
  expiresAt: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
});
const clockBody = z
  .object({
    advanceSeconds: z
      .number()
      .int()
      .min(0)
      .max(10 * 365 * 86_400)
      .default(0),
    /** Frozen, the clock moves only when advanced: a test's timing cannot depend on the machine's speed. */
    frozen: z.boolean().optional(),
  })
  .strict();
const count = z.number().int().min(0).max(1_000_000).default(0);
const mutateBody = z
  .object({ collection: z.enum(KINDS), creates: count, updates: count, deletes: count })
  .strict();

const setBody = z
  .object({ collection: z.enum(KINDS), id: z.string().min(1), fields: z.record(z.string(), z.unknown()) })
  .strict();

const name = z.string().regex(/^[_A-Za-z][_0-9A-Za-z]{0,62}$/, 'a GraphQL name');
const schemaFieldBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('remove'), type: name, field: name }).strict(),
  z
    .object({
      action: z.literal('add'),
      type: name,
      field: name,
      fieldType: z.enum(['String', 'Int', 'Float', 'Boolean']).default('String'),
    })
    .strict(),
]);
const refuseBody = z
  .object({
    id: z.string().min(1),
    message: z.string().min(1).max(500).optional(),
    clear: z.boolean().optional(),
  })
  .strict();
const introspectionBody = z.object({ enabled: z.boolean() }).strict();

const expiryMs = (s: string) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : s);

/**
 * A hook that changes state answers only a request a web page cannot forge: JSON (a cross-site form or a
 * "simple" fetch cannot send it without a CORS preflight, which the sandbox never grants) and no foreign
 * `Origin`. Without this, any page the developer opens could revoke, rotate or reset with one form post.
 */
function sameSiteJson(sb: Sandbox, handler: Handler): Handler {
  return (req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== new URL(sb.baseUrl).origin)
      throw new HttpError(403, {
        error: 'forbidden',
        error_description: `sandbox hooks refuse cross-site requests (Origin ${origin})`,
      });
    if (mediaType(req) !== 'application/json')
      throw new HttpError(415, {
        error: 'invalid_request',
        error_description: 'Content-Type must be application/json (send {} when there is nothing to say)',
      });
    return handler(req);
  };
}

/** Test and demo hooks under `{base_url}/_sandbox/` (docs/sandbox.md). */
export function registerHooks(router: Router, sb: Sandbox): void {
  const post = (path: string, handler: Handler) =>
    router.add('POST', path, 'hooks', sameSiteJson(sb, handler));
  const pendingGrant = (userCode: string) => {
    const grant = sb.devices.pendingByUserCode(userCode);
    if (!grant)
      throw new HttpError(404, {
        error: 'not_found',
        error_description: `no pending device code with user code ${userCode}`,
      });
    return grant;
  };
  const credential = (clientId: string) => {
    const c = sb.credentials.get(clientId);
    if (!c) throw new HttpError(404, { error: 'not_found', error_description: `no credential ${clientId}` });
    return c;
  };

  post('/_sandbox/device/approve', async (req) => {
    const body = await parse(req, approveBody);
    const person = findPerson(body.username);
    if (!person)
      throw new HttpError(400, {
        error: 'invalid_request',
        error_description: `no seeded person ${body.username}`,
      });
    sb.devices.approve(pendingGrant(body.userCode), person.id);
    return json(200, { approved: true, username: person.username });
  });
  post('/_sandbox/device/deny', async (req) => {
    sb.devices.deny(pendingGrant((await parse(req, userCodeBody)).userCode));
    return json(200, { denied: true });
  });
  const seededPerson = (username: string) => {
    const person = findPerson(username);
    if (!person)
      throw new HttpError(400, {
        error: 'invalid_request',
        error_description: `no seeded person ${username}`,
      });
    return person;
  };
  // An administrator signing a person out everywhere (Keycloak: Users → Sessions → Sign out).
  post('/_sandbox/sessions/end', async (req) => {
    const person = seededPerson((await parse(req, personBody)).username);
    return json(200, { ended: sb.sessions.endAllOf(person.id) });
  });
  // An administrator disabling or enabling a person (Keycloak: the user's "Enabled" switch).
  post('/_sandbox/people/disable', async (req) => {
    const person = seededPerson((await parse(req, personBody)).username);
    sb.disabledPeople.add(person.id);
    return json(200, { username: person.username, enabled: false });
  });
  post('/_sandbox/people/enable', async (req) => {
    const person = seededPerson((await parse(req, personBody)).username);
    sb.disabledPeople.delete(person.id);
    return json(200, { username: person.username, enabled: true });
  });
  post('/_sandbox/credentials', async (req) => {
    const body = await parse(req, credentialBody);
    const { credential: c, secret } = sb.credentials.create(body.label, {
      expiresAt: body.expiresAt ? expiryMs(body.expiresAt) : undefined,
    });
    return json(201, {
      clientId: c.clientId,
      clientSecret: secret,
      label: c.label,
      expiresAt: body.expiresAt ?? null,
    });
  });
  post('/_sandbox/credentials/:clientId/rotate', (req) => {
    const secret = sb.credentials.rotate(credential(req.params.clientId).clientId);
    if (!secret)
      throw new HttpError(409, {
        error: 'conflict',
        error_description: 'only an active credential can be rotated',
      });
    return json(200, { clientSecret: secret });
  });
  post('/_sandbox/credentials/:clientId/revoke', (req) => {
    sb.credentials.revoke(credential(req.params.clientId).clientId);
    return json(200, { revoked: true });
  });
  post('/_sandbox/clock', async (req) => {
    const body = await parse(req, clockBody);
    if (body.frozen !== undefined) sb.clock.freeze(body.frozen);
    sb.clock.advanceSeconds(body.advanceSeconds);
    return json(200, { now: new Date(sb.clock.now()).toISOString() });
  });
  router.add('GET', '/_sandbox/clock', 'hooks', () =>
    json(200, { now: new Date(sb.clock.now()).toISOString() }),
  );
  post('/_sandbox/faults', async (req) => {
    sb.faults.add(await parse(req, faultSpecSchema));
    return json(200, { pending: sb.faults.pending() });
  });
  // The outage is over: what is still queued is dropped.
  post('/_sandbox/faults/clear', () => {
    sb.faults.clear();
    return json(200, { pending: [] });
  });
  post('/_sandbox/data/mutate', async (req) => {
    const b = await parse(req, mutateBody);
    return json(200, sb.data.mutate(b.collection, b.creates, b.updates, b.deletes));
  });
  // One record's fields set to exact values (any JSON, lone surrogates and NULs included): how tests put a poison
  // record, or a precise change, at the source.
  post('/_sandbox/data/set', async (req) => {
    const b = await parse(req, setBody);
    const record = sb.data.collections[b.collection].update(b.id, b.fields);
    if (!record)
      throw new HttpError(404, {
        error: 'not_found',
        error_description: `no ${b.collection} record ${b.id}`,
      });
    return json(200, { id: b.id });
  });
  // The tenant's schema moves: a field removed from or added to a type (schema drift between two runs).
  post('/_sandbox/schema/fields', async (req) => {
    const b = await parse(req, schemaFieldBody);
    const key = `${b.type}.${b.field}`;
    const e = sb.schemaEdits;
    const next: SchemaEdits =
      b.action === 'remove'
        ? {
            ...e,
            removed: [...new Set([...e.removed, key])],
            added: e.added.filter((a) => `${a.type}.${a.field}` !== key),
          }
        : e.removed.includes(key)
          ? // A field removed before comes back as it was.
            { ...e, removed: e.removed.filter((r) => r !== key) }
          : { ...e, added: [...e.added, { type: b.type, field: b.field, fieldType: b.fieldType }] };
    const problem = schemaEditProblem(sb, b, next);
    if (problem) throw new HttpError(400, { error: 'invalid_request', error_description: problem });
    sb.editSchema((edits) => Object.assign(edits, next));
    return json(200, { removed: sb.schemaEdits.removed, added: sb.schemaEdits.added });
  });
  post('/_sandbox/schema/introspection', async (req) => {
    const b = await parse(req, introspectionBody);
    sb.editSchema((e) => (e.introspection = b.enabled));
    return json(200, { introspection: b.enabled });
  });
  // The service refusing one record's change by its own rules (a domain error), until cleared or reset.
  post('/_sandbox/mutations/refuse', async (req) => {
    const b = await parse(req, refuseBody);
    if (b.clear) sb.refusedMutations.delete(b.id);
    else sb.refusedMutations.set(b.id, b.message ?? `record ${b.id} is locked and cannot be changed`);
    return json(200, { refused: [...sb.refusedMutations.keys()] });
  });
  // Limits the tenant starts (or stops: null) enforcing unannounced: a complexity ceiling, a rate per credential.
  post('/_sandbox/limits', async (req) => {
    const b = await parse(req, limitsSchema);
    for (const key of ['complexity', 'rate'] as const)
      if (b[key] !== undefined) sb.limits[key] = b[key] ?? undefined;
    return json(200, { complexity: sb.limits.complexity ?? null, rate: sb.limits.rate ?? null });
  });
  router.add('GET', '/_sandbox/stats', 'hooks', () => json(200, sb.stats));
  post('/_sandbox/reset', () => {
    sb.reset();
    return json(200, { reset: true });
  });
}
