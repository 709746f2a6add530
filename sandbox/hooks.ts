import { z } from 'zod';
import { KINDS } from './data/generate';
import { faultSpecSchema } from './faults';
import { HttpError, json, readJson, type Request, type Router } from './http';
import { findPerson } from './idp/people';
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
const credentialBody = z.object({
  label: z.string().trim().min(1).max(100),
  expiresAt: z.iso.datetime({ offset: true }).or(z.iso.date()).optional(),
});
const clockBody = z.object({
  advanceSeconds: z
    .number()
    .int()
    .min(0)
    .max(10 * 365 * 86_400),
});
const count = z.number().int().min(0).max(1_000_000).default(0);
const mutateBody = z
  .object({ collection: z.enum(KINDS), creates: count, updates: count, deletes: count })
  .strict();

const expiryMs = (s: string) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : s);

/** Test and demo hooks under `{base_url}/_sandbox/` (DESIGN §4). */
export function registerHooks(router: Router, sb: Sandbox): void {
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

  router
    .add('POST', '/_sandbox/device/approve', 'hooks', async (req) => {
      const body = await parse(req, approveBody);
      const person = findPerson(body.username);
      if (!person)
        throw new HttpError(400, {
          error: 'invalid_request',
          error_description: `no seeded person ${body.username}`,
        });
      sb.devices.approve(pendingGrant(body.userCode), person.id);
      return json(200, { approved: true, username: person.username });
    })
    .add('POST', '/_sandbox/device/deny', 'hooks', async (req) => {
      sb.devices.deny(pendingGrant((await parse(req, userCodeBody)).userCode));
      return json(200, { denied: true });
    })
    .add('POST', '/_sandbox/credentials', 'hooks', async (req) => {
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
    })
    .add('POST', '/_sandbox/credentials/:clientId/rotate', 'hooks', (req) => {
      const secret = sb.credentials.rotate(credential(req.params.clientId).clientId);
      if (!secret)
        throw new HttpError(409, {
          error: 'conflict',
          error_description: 'only an active credential can be rotated',
        });
      return json(200, { clientSecret: secret });
    })
    .add('POST', '/_sandbox/credentials/:clientId/revoke', 'hooks', (req) => {
      sb.credentials.revoke(credential(req.params.clientId).clientId);
      return json(200, { revoked: true });
    })
    .add('POST', '/_sandbox/clock', 'hooks', async (req) => {
      sb.clock.advanceSeconds((await parse(req, clockBody)).advanceSeconds);
      return json(200, { now: new Date(sb.clock.now()).toISOString() });
    })
    .add('GET', '/_sandbox/clock', 'hooks', () => json(200, { now: new Date(sb.clock.now()).toISOString() }))
    .add('POST', '/_sandbox/faults', 'hooks', async (req) => {
      sb.faults.add(await parse(req, faultSpecSchema));
      return json(200, { pending: sb.faults.pending() });
    })
    .add('POST', '/_sandbox/data/mutate', 'hooks', async (req) => {
      const b = await parse(req, mutateBody);
      return json(200, sb.data.mutate(b.collection, b.creates, b.updates, b.deletes));
    })
    .add('GET', '/_sandbox/stats', 'hooks', () => json(200, sb.stats))
    .add('POST', '/_sandbox/reset', 'hooks', () => {
      sb.reset();
      return json(200, { reset: true });
    });
}
