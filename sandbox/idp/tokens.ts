import type { Sandbox } from '../state';
import type { Person } from './people';
import type { UserSession } from './sessions';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 300;
export const PORTAL_CLIENT_ID = 'portal';

/** Device-flow and refresh token response (seed §2): access + refresh token, refresh_expires_in. */
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

/** Client-credentials response (seed §2): no refresh token. Claims as Keycloak's service accounts. */
export async function serviceAccountTokenResponse(sb: Sandbox, clientId: string) {
  const accessToken = await sb.keys.sign(
    {
      sub: `service-account-${clientId}`,
      typ: 'Bearer',
      aud: 'account',
      azp: clientId,
      client_id: clientId,
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
