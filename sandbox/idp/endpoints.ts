import { json, oauthError, readForm, type Request, type Router } from '../http';
import type { Sandbox } from '../state';
import { DEVICE_CODE_LIFETIME_SECONDS, POLL_INTERVAL_SECONDS } from './device';
import { personById } from './people';
import { PORTAL_CLIENT_ID } from '../../shared/auth/endpoints';
import { personTokenResponse, serviceAccountTokenResponse } from './tokens';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

/** Form field that must be present once; a 400 names it, as Keycloak does. */
function required(form: URLSearchParams, name: string): string {
  const value = form.get(name);
  if (value === null || value === '')
    throw oauthError(400, 'invalid_request', `Missing form parameter: ${name}`);
  return value;
}

/** `client_id` at the token and device endpoints: Keycloak 26 answers its absence 401 `invalid_client`. */
function clientIdOf(form: URLSearchParams): string {
  const value = form.get('client_id');
  if (value === null || value === '') throw oauthError(401, 'invalid_client', 'Missing parameter: client_id');
  return value;
}

/** The device flow and refresh belong to the public client `portal`; any other id is refused. */
function requirePortal(sb: Sandbox, clientId: string, grant: string): void {
  if (clientId === PORTAL_CLIENT_ID) return;
  if (sb.credentials.get(clientId)) {
    throw oauthError(400, 'unauthorized_client', `Client is not allowed to use the ${grant} grant`);
  }
  throw oauthError(401, 'invalid_client', 'Invalid client or Invalid client credentials');
}

/** Client id and secret from the form or HTTP Basic, both of which Keycloak accepts. */
function clientAuth(req: Request, form: URLSearchParams): { clientId: string | null; secret: string | null } {
  const header = req.headers.authorization;
  if (header?.startsWith('Basic ')) {
    const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i > 0) {
      try {
        return {
          clientId: decodeURIComponent(decoded.slice(0, i)),
          secret: decodeURIComponent(decoded.slice(i + 1)),
        };
      } catch {
        throw oauthError(400, 'invalid_request', 'malformed Basic authorization header (bad %-encoding)');
      }
    }
  }
  return { clientId: form.get('client_id'), secret: form.get('client_secret') };
}

async function deviceAuthorization(sb: Sandbox, req: Request) {
  const form = await readForm(req);
  const clientId = clientIdOf(form);
  requirePortal(sb, clientId, 'device authorization');
  const scope = form.get('scope') ?? '';
  if (!scope.split(' ').includes('openid')) {
    throw oauthError(400, 'invalid_scope', 'scope is required in the device flow and must include openid');
  }
  sb.stats.deviceAuthorization++;
  const grant = sb.devices.create(clientId, scope);
  const verificationUri = `${sb.realmUrl()}/device`;
  return json(
    200,
    {
      device_code: grant.deviceCode,
      user_code: grant.userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(grant.userCode)}`,
      expires_in: DEVICE_CODE_LIFETIME_SECONDS,
      interval: POLL_INTERVAL_SECONDS,
    },
    NO_STORE,
  );
}

async function deviceCodeGrant(sb: Sandbox, form: URLSearchParams) {
  sb.stats.token.device_code++;
  requirePortal(sb, clientIdOf(form), 'device code');
  const grant = sb.devices.byDevice(required(form, 'device_code'));
  if (!grant || grant.clientId !== PORTAL_CLIENT_ID)
    throw oauthError(400, 'invalid_grant', 'Device code not valid');
  if (grant.status === 'used') throw oauthError(400, 'invalid_grant', 'Device code already used');
  if (sb.devices.isExpired(grant)) throw oauthError(400, 'expired_token', 'Device code is expired');
  const now = sb.clock.now();
  // Keycloak: a poll within `interval` seconds of the last accepted poll is answered slow_down.
  if (
    grant.lastAcceptedPollAt !== undefined &&
    now - grant.lastAcceptedPollAt < POLL_INTERVAL_SECONDS * 1000
  ) {
    throw oauthError(400, 'slow_down', 'Slow down');
  }
  grant.lastAcceptedPollAt = now;
  if (grant.status === 'pending')
    throw oauthError(400, 'authorization_pending', 'The authorization request is still pending');
  if (grant.status === 'denied')
    throw oauthError(400, 'access_denied', 'The end user denied the authorization request');
  const person = grant.userId ? personById(grant.userId) : undefined;
  if (!person) throw oauthError(400, 'invalid_grant', 'User not found');
  if (sb.disabledPeople.has(person.id)) throw oauthError(400, 'invalid_grant', 'User disabled');
  grant.status = 'used';
  const session = sb.sessions.start(person.id, grant.scope);
  return json(200, await personTokenResponse(sb, person, session, grant.scope), NO_STORE);
}

async function refreshTokenGrant(sb: Sandbox, form: URLSearchParams) {
  sb.stats.token.refresh_token++;
  requirePortal(sb, clientIdOf(form), 'refresh token');
  const resolved = sb.sessions.resolve(required(form, 'refresh_token'));
  if ('error' in resolved) throw oauthError(400, 'invalid_grant', resolved.error);
  const person = personById(resolved.session.userId);
  if (!person) throw oauthError(400, 'invalid_grant', 'User not found');
  if (sb.disabledPeople.has(person.id)) throw oauthError(400, 'invalid_grant', 'User disabled');
  sb.sessions.touch(resolved.session);
  return json(200, await personTokenResponse(sb, person, resolved.session, resolved.session.scope), NO_STORE);
}

async function clientCredentialsGrant(sb: Sandbox, req: Request, form: URLSearchParams) {
  sb.stats.token.client_credentials++;
  const { clientId, secret } = clientAuth(req, form);
  if (!clientId) throw oauthError(401, 'invalid_client', 'Missing parameter: client_id');
  // The seed's call carries no scope; the sandbox holds clients to it.
  if (form.has('scope') && !sb.options.acceptClientCredentialsScope)
    throw oauthError(400, 'invalid_scope', 'The client_credentials grant takes no scope parameter');
  if (clientId === PORTAL_CLIENT_ID) {
    throw oauthError(401, 'unauthorized_client', 'Public client not allowed to retrieve service account');
  }
  if (!secret) throw oauthError(401, 'unauthorized_client', 'Invalid client or Invalid client credentials');
  const auth = sb.credentials.authenticate(clientId, secret);
  if (!auth.ok) {
    // Keycloak: wrong secret → unauthorized_client; unknown or disabled client → invalid_client.
    const error = auth.reason === 'wrong-secret' ? 'unauthorized_client' : 'invalid_client';
    throw oauthError(401, error, 'Invalid client or Invalid client credentials');
  }
  return json(200, await serviceAccountTokenResponse(sb, clientId), NO_STORE);
}

async function token(sb: Sandbox, req: Request) {
  const form = await readForm(req);
  const grantType = required(form, 'grant_type');
  switch (grantType) {
    case 'urn:ietf:params:oauth:grant-type:device_code':
      return deviceCodeGrant(sb, form);
    case 'refresh_token':
      return refreshTokenGrant(sb, form);
    case 'client_credentials':
      return clientCredentialsGrant(sb, req, form);
    default:
      throw oauthError(400, 'unsupported_grant_type', `Unsupported grant_type: ${grantType}`);
  }
}

/**
 * OIDC RP-initiated logout as a client calls it (Keycloak: `client_id` and the `refresh_token` of the
 * session): the session ends, its refresh tokens stop working; 204.
 */
async function logout(sb: Sandbox, req: Request) {
  const form = await readForm(req);
  requirePortal(sb, clientIdOf(form), 'logout');
  const session = sb.sessions.sessionOf(required(form, 'refresh_token'));
  if (!session || session.ended) throw oauthError(400, 'invalid_grant', 'Session not active');
  sb.sessions.end(session);
  return { status: 204, headers: NO_STORE };
}

function discovery(sb: Sandbox) {
  const realm = sb.realmUrl();
  const oidc = `${realm}/protocol/openid-connect`;
  return json(200, {
    issuer: sb.issuer(),
    token_endpoint: `${oidc}/token`,
    jwks_uri: `${oidc}/certs`,
    device_authorization_endpoint: `${oidc}/auth/device`,
    end_session_endpoint: `${oidc}/logout`,
    grant_types_supported: [
      'urn:ietf:params:oauth:grant-type:device_code',
      'refresh_token',
      'client_credentials',
    ],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    id_token_signing_alg_values_supported: ['RS256'],
    scopes_supported: ['openid', 'profile', 'email'],
    subject_types_supported: ['public'],
    response_types_supported: ['code'],
  });
}

export function registerIdpEndpoints(router: Router, sb: Sandbox): void {
  const oidc = '/auth/realms/:tenant/protocol/openid-connect';
  router
    .add('POST', `${oidc}/auth/device`, 'device', (req) => deviceAuthorization(sb.realm(req), req))
    .add('POST', `${oidc}/token`, 'token', (req) => token(sb.realm(req), req))
    .add('POST', `${oidc}/logout`, 'logout', (req) => logout(sb.realm(req), req))
    .add('GET', `${oidc}/certs`, 'certs', (req) => json(200, sb.realm(req).keys.jwks()))
    .add('GET', '/auth/realms/:tenant/.well-known/openid-configuration', 'discovery', (req) =>
      discovery(sb.realm(req)),
    );
}
