import { UpstreamError } from '../errors';
import type { DeviceCode, PollOutcome } from './flow';
import { DEVICE_CODE_GRANT, PORTAL_CLIENT_ID, type TenantEndpoints } from '../auth/endpoints';
import {
  delegatedTokenSchema,
  deviceAuthorizationSchema,
  parseBody,
  postForm,
  type DelegatedTokenResponse,
  type FetchLike,
} from '../auth/oauth';

export interface DeviceHttpOptions {
  fetch?: FetchLike;
  timeoutMs?: number;
  abortSignal?: AbortSignal;
}

/** `client_id=portal`, `scope=openid`; a failure stops the flow (docs/service-rules.md#device-flow). */
export async function requestDeviceCode(
  endpoints: TenantEndpoints,
  options: DeviceHttpOptions = {},
): Promise<DeviceCode> {
  const url = endpoints.deviceAuthorization;
  const reply = await postForm(url, { client_id: PORTAL_CLIENT_ID, scope: 'openid' }, options);
  if (reply.kind !== 'ok') {
    const what =
      reply.kind === 'oauth-error'
        ? reply.error
        : reply.status
          ? `HTTP ${reply.status}`
          : 'network error or timeout';
    throw new UpstreamError(
      reply.kind === 'transient' ? 'upstream_unavailable' : 'upstream_rejected',
      url,
      `device code request failed (${what})`,
      {
        upstreamStatus: reply.status,
      },
    );
  }
  const b = parseBody(url, deviceAuthorizationSchema, reply.body);
  return {
    deviceCode: b.device_code,
    userCode: b.user_code,
    verificationUri: b.verification_uri,
    verificationUriComplete: b.verification_uri_complete,
    expiresInSeconds: b.expires_in,
    intervalSeconds: b.interval,
  };
}

/** One poll (device_code grant, docs/service-rules.md#device-flow). The token response, if any, is returned for storing. */
export async function pollDeviceToken(
  endpoints: TenantEndpoints,
  deviceCode: string,
  options: DeviceHttpOptions = {},
): Promise<{ outcome: PollOutcome; tokens?: DelegatedTokenResponse }> {
  const url = endpoints.token;
  let reply;
  try {
    reply = await postForm(
      url,
      { grant_type: DEVICE_CODE_GRANT, client_id: PORTAL_CLIENT_ID, device_code: deviceCode },
      options,
    );
  } catch (err) {
    // A refused redirect is final, like any poll error other than pending and slow_down (docs/service-rules.md#device-flow).
    if (err instanceof UpstreamError && err.code === 'upstream_rejected')
      return { outcome: { kind: 'error', error: 'redirect_refused', description: err.message } };
    throw err;
  }
  switch (reply.kind) {
    case 'ok':
      return { outcome: { kind: 'token' }, tokens: parseBody(url, delegatedTokenSchema, reply.body) };
    case 'oauth-error':
      return { outcome: { kind: 'error', error: reply.error, description: reply.description } };
    case 'transient':
      return { outcome: { kind: 'transient' } };
    default:
      return { outcome: { kind: 'error', error: `http_${reply.status}` } };
  }
}
