import { createHash } from 'node:crypto';
import type { Sandbox } from '../state';
import type { Person } from './people';
import type { UserSession } from './sessions';
import { PORTAL_CLIENT_ID } from '../../shared/auth/endpoints';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 300;

/** Device-flow and refresh token response (docs/service-rules.md#tokens): access + refresh token, refresh_expires_in. */
export async function personTokenResponse(sb: Sandbox, person: Person, session: UserSession, scope: string) {
  const issuer = sb.issuer();
  const common = {
    sub: person.id,
    azp: PORTAL_CLIENT_ID,
    sid: session.id,
    preferred_username: person.username,
    name: person.name,
    email: person.email,
  };
  const accessToken = await sb.keys.sign(
    { ...common, typ: 'Bearer', aud: 'account', scope, realm_access: { roles: [person.role] } },
    issuer,
    ACCESS_TOKEN_LIFETIME_SECONDS,
    sb.clock,
  );
  const body: Record<string, unknown> = {
    access_token: accessToken,
    expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
    refresh_token: sb.sessions.issueRefreshToken(session),
    refresh_expires_in: sb.sessions.refreshExpiresIn(session),
    token_type: 'Bearer',
    'not-before-policy': 0,
    session_state: session.id,
    scope,
  };
  if (scope.split(' ').includes('openid')) {
    body.id_token = await sb.keys.sign(
      { ...common, typ: 'ID', aud: PORTAL_CLIENT_ID },
      issuer,
      ACCESS_TOKEN_LIFETIME_SECONDS,
      sb.clock,
    );
  }
  return body;
}

/** A stable UUID for a client's service-account user (Keycloak gives that user a UUID id). */
const serviceAccountId = (clientId: string) => {
  const h = createHash('sha256').update(`service-account:${clientId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

/**
 * Client-credentials response (docs/service-rules.md#tokens): no refresh token. Claims as Keycloak 26 issues them for a service
 * account: `sub` is the service-account user's UUID, `azp` names the client, no `client_id` claim.
 */
export async function serviceAccountTokenResponse(sb: Sandbox, clientId: string) {
  const accessToken = await sb.keys.sign(
    {
      sub: serviceAccountId(clientId),
      typ: 'Bearer',
      aud: 'account',
      azp: clientId,
      preferred_username: `service-account-${clientId}`,
      scope: 'profile email',
      realm_access: { roles: ['read-only'] },
    },
    sb.issuer(),
    ACCESS_TOKEN_LIFETIME_SECONDS,
    sb.clock,
  );
  return { access_token: accessToken, expires_in: ACCESS_TOKEN_LIFETIME_SECONDS, token_type: 'Bearer' };
}
