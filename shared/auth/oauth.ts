import { z } from 'zod';
import { httpsOrLoopback } from '../config';
import { UpstreamError } from '../errors';
import { isTransientStatus, withTimeout } from '../net/retry';

export type FetchLike = typeof fetch;

/** What a token-endpoint call came to, before any policy decides what to do about it. */
export type OAuthReply =
  | { kind: 'ok'; status: number; body: unknown }
  | { kind: 'oauth-error'; status: number; error: string; description?: string }
  | { kind: 'transient'; status: number; retryAfter: string | null }
  | { kind: 'http-error'; status: number };

const errorBody = z.object({ error: z.string().min(1), error_description: z.string().optional() });

/** Where a redirect pointed (its origin only: a path or query may carry anything), for the message. */
const originOf = (location: string | null, base: string) => {
  try {
    return location ? ` to ${new URL(location, base).origin}` : '';
  } catch {
    return '';
  }
};

export interface PostFormOptions {
  fetch?: FetchLike;
  timeoutMs?: number;
  abortSignal?: AbortSignal;
}

/**
 * POSTs a form to an OAuth endpoint. Network failures and timeouts become a transient reply; the caller's
 * own abort is rethrown as is. Nothing of the form (secrets, codes) goes into an error. Redirects are never
 * followed: the form carries a client secret, refresh token or device code, which a redirect would re-post to
 * wherever it points; a 3xx is an error naming the setting to fix.
 */
export async function postForm(
  url: string,
  fields: Record<string, string>,
  options: PostFormOptions = {},
): Promise<OAuthReply> {
  let res: Response;
  let text: string;
  try {
    ({ res, text } = await withTimeout(options.timeoutMs ?? 10_000, options.abortSignal, async (signal) => {
      const res = await (options.fetch ?? fetch)(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(fields),
        redirect: 'manual',
        signal,
      });
      return { res, text: await res.text() };
    }));
  } catch {
    if (options.abortSignal?.aborted) throw options.abortSignal.reason;
    return { kind: 'transient', status: 0, retryAfter: null };
  }
  if (res.status >= 300 && res.status < 400)
    throw new UpstreamError(
      'upstream_rejected',
      url,
      `answered HTTP ${res.status} with a redirect${originOf(res.headers.get('location'), url)}; requests that carry credentials never follow redirects. Set TENANT_AUTH_URL to the identity provider's own address`,
      { upstreamStatus: res.status },
    );
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (res.ok) {
    if (json === undefined)
      throw new UpstreamError('upstream_malformed', url, `HTTP ${res.status} with a body that is not JSON`);
    return { kind: 'ok', status: res.status, body: json };
  }
  if (isTransientStatus(res.status))
    return { kind: 'transient', status: res.status, retryAfter: res.headers.get('retry-after') };
  const parsed = errorBody.safeParse(json);
  if (parsed.success)
    return {
      kind: 'oauth-error',
      status: res.status,
      error: parsed.data.error,
      description: parsed.data.error_description,
    };
  return { kind: 'http-error', status: res.status };
}

/** Parses a success body with zod; a malformed one is an error naming the endpoint and the fields. */
export function parseBody<T>(url: string, schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) {
    const fields = result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
    throw new UpstreamError('upstream_malformed', url, `malformed response (${fields})`);
  }
  return result.data;
}

export const clientCredentialsTokenSchema = z.object({
  access_token: z.string().min(1),
  expires_in: z.number().int().positive(),
  token_type: z.string().regex(/^bearer$/i, 'must be Bearer'),
});

export const delegatedTokenSchema = clientCredentialsTokenSchema.extend({
  refresh_token: z.string().min(1),
  refresh_expires_in: z.number().int().nonnegative().optional(),
});
export type DelegatedTokenResponse = z.infer<typeof delegatedTokenSchema>;

/**
 * An address shown to a person as a link follows the tenant URLs' rule: anything else (javascript:, data:,
 * file:, plain http) would be a link the admin page must never render.
 */
const linkUrl = httpsOrLoopback;

export const deviceAuthorizationSchema = z.object({
  device_code: z.string().min(1),
  user_code: z.string().min(1),
  verification_uri: linkUrl,
  verification_uri_complete: linkUrl.optional(),
  expires_in: z.number().int().positive(),
  interval: z.number().int().positive().optional(),
});
export type DeviceAuthorizationResponse = z.infer<typeof deviceAuthorizationSchema>;

/** Keycloak answers a wrong secret with unauthorized_client, an unknown or disabled client with invalid_client. */
export const isCredentialRejection = (reply: OAuthReply) =>
  reply.kind === 'oauth-error' && (reply.error === 'invalid_client' || reply.error === 'unauthorized_client');
