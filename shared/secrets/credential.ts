import type { TokenCredential } from '@azure/identity';
import type { AppConfig } from '../config';

const credentials = new Map<string, TokenCredential>();

/**
 * The app's identity for every Azure SDK client (Key Vault, Blob, Table, PostgreSQL's Entra sign-in): one
 * credential per process, so its token cache is shared and the managed-identity endpoint is asked once per scope,
 * not once per client. The user-assigned identity when AZURE_CLIENT_ID names one, otherwise the default chain.
 * `@azure/identity` loads here, on first use.
 */
export function azureCredential(config: Pick<AppConfig, 'azureClientId'>): TokenCredential {
  const key = config.azureClientId ?? '';
  let credential = credentials.get(key);
  if (!credential) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const identity = require('@azure/identity') as typeof import('@azure/identity');
    credential = config.azureClientId
      ? new identity.ManagedIdentityCredential({ clientId: config.azureClientId })
      : new identity.DefaultAzureCredential();
    credentials.set(key, credential);
  }
  return credential;
}
