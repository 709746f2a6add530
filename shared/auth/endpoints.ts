import type { TenantSettings } from '../config';

/** The seed's endpoints (§4), derived from `{auth_url}` and `{tenant}` in one place. */
export interface TenantEndpoints {
  token: string;
  deviceAuthorization: string;
  graphql: string;
}

export function tenantEndpoints(tenant: TenantSettings): TenantEndpoints {
  const oidc = `${tenant.authUrl}/realms/${encodeURIComponent(tenant.name)}/protocol/openid-connect`;
  return {
    token: `${oidc}/token`,
    deviceAuthorization: `${oidc}/auth/device`,
    graphql: `${tenant.baseUrl}/graphql`,
  };
}

/** The public client the seed names for the device flow and refresh. */
export const PORTAL_CLIENT_ID = 'portal';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
