import type { TenantSettings } from '../config';

/** The service's endpoints (docs/service-rules.md#endpoints), derived from `{auth_url}` and `{tenant}` in one place. */
export interface TenantEndpoints {
  /** OpenID Connect discovery of the tenant's realm. */
  discovery: string;
  token: string;
  deviceAuthorization: string;
  graphql: string;
}

export function tenantEndpoints(tenant: TenantSettings): TenantEndpoints {
  const realm = `${tenant.authUrl}/realms/${encodeURIComponent(tenant.name)}`;
  const oidc = `${realm}/protocol/openid-connect`;
  return {
    discovery: `${realm}/.well-known/openid-configuration`,
    token: `${oidc}/token`,
    deviceAuthorization: `${oidc}/auth/device`,
    graphql: `${tenant.baseUrl}/graphql`,
  };
}

/** The public client the service names for the device flow and refresh. */
export const PORTAL_CLIENT_ID = 'portal';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
