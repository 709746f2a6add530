import { tenantEndpoints } from '../auth/endpoints';
import type { AppConfig } from '../config';
import { CredentialRejected, RequestRefused } from '../errors';
import type { DoctorCheck } from '../feature';

/** The tenant: its identity provider, the M2M credential, GraphQL, and that the credential cannot write. */

export function apiCredentialsPage(config: AppConfig): string {
  return config.tenant ? `${config.tenant.baseUrl}/${config.tenant.name}/` : 'the tenant portal';
}

const identityProvider: DoctorCheck['run'] = async ({ access }, signal) => {
  const url = tenantEndpoints(access.tenant).discovery;
  // Discovery carries no credential; still, no redirect is followed (an unexpected one is a finding).
  const res = await fetch(url, { signal, redirect: 'manual' });
  const body = (await res.json().catch(() => undefined)) as { token_endpoint?: unknown } | undefined;
  if (res.status === 200 && typeof body?.token_endpoint === 'string')
    return { state: 'ok', found: `discovery answers at ${url}` };
  return {
    state: 'fail',
    found: `discovery at ${url} answered HTTP ${res.status}${res.status === 404 ? ' (no such realm)' : ''}`,
    action: 'Check TENANT_AUTH_URL and TENANT_NAME: the realm is the tenant name.',
  };
};

const clientCredentials: DoctorCheck['run'] = async ({ config, access, passed }, signal) => {
  if (!passed.has('secret store') || !passed.has('identity provider'))
    return {
      state: 'warn',
      found: 'not tried: the secret or the identity provider is not available',
      action: 'Fix the checks above first.',
    };
  const { clientId } = access.tenant;
  const portal = apiCredentialsPage(config);
  try {
    await access.m2m.getToken({ abortSignal: signal });
    return { state: 'ok', found: `credential ${clientId} accepted (client_credentials)` };
  } catch (err) {
    if (!(err instanceof CredentialRejected)) throw err;
    return err.oauthError === 'unauthorized_client'
      ? {
          state: 'fail',
          found: `credential ${clientId} refused: unauthorized_client`,
          action: `The secret is wrong or was rotated: copy the current one from the API Credentials page (${portal}, Settings → API Credentials) and store it with tenant-integrations secrets set ${config.clientSecretName}.`,
        }
      : {
          state: 'fail',
          found: `credential ${clientId} refused: ${err.oauthError}`,
          action: `The credential is unknown or revoked: create one on the API Credentials page (${portal}, Settings → API Credentials) and set TENANT_CLIENT_ID and the secret. If the portal has no API Credentials page, the organisation has not enabled M2M credentials: ask the provider’s support to enable them.`,
        };
  }
};

const graphql: DoctorCheck['run'] = async ({ access, passed }, signal) => {
  if (!passed.has('client credentials'))
    return { state: 'warn', found: 'not tried: no token', action: 'Fix the credential first.' };
  const { name, baseUrl } = access.tenant;
  const data = (await access.graphql.request<{ tenant: { name: string } | null }>(
    'query DoctorTenant($name: String!) { tenant(name: $name) { name } }',
    { variables: { name }, abortSignal: signal },
  )) ?? { tenant: null };
  if (data.tenant?.name === name)
    return { state: 'ok', found: `${baseUrl}/graphql answers; tenant { name } is ${name}` };
  return {
    state: 'fail',
    found: `${baseUrl}/graphql does not know tenant ${name}`,
    action: 'Check TENANT_NAME and TENANT_BASE_URL: they must name the same organisation.',
  };
};

const readOnly: DoctorCheck['run'] = async ({ access }, signal) => {
  try {
    await access.graphql.request('mutation DoctorProbe { __typename }', { abortSignal: signal });
    return {
      state: 'fail',
      found: 'a mutation was sent with the M2M credential',
      action: 'This is a defect: M2M credentials are read-only; report it.',
    };
  } catch (err) {
    if (err instanceof RequestRefused && err.code === 'read_only_credential')
      return {
        state: 'ok',
        found: 'mutations with the M2M credential are refused before the network, as the service requires',
      };
    throw err;
  }
};

export const TENANT_CHECKS: readonly DoctorCheck[] = [
  { name: 'identity provider', run: identityProvider },
  { name: 'client credentials', run: clientCredentials },
  { name: 'GraphQL', run: graphql },
  { name: 'read-only credential', run: readOnly },
];
