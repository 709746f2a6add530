import { join } from 'node:path';
import { type AppConfig } from '../shared/config';
import { loadConfig } from '../shared/app';
import { LocalFileSecretStore } from '../shared/secrets';

export interface SandboxLine {
  baseUrl: string;
  authUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
}

/** The app's configuration for a sandbox a bench started, its secret in a secret file under `dir`. */
export async function sandboxConfig(
  sandbox: SandboxLine,
  dir: string,
  extra: Record<string, string> = {},
): Promise<AppConfig> {
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sandbox.clientSecret);
  return loadConfig({
    TENANT_NAME: sandbox.tenant,
    TENANT_BASE_URL: sandbox.baseUrl,
    TENANT_AUTH_URL: sandbox.authUrl,
    TENANT_CLIENT_ID: sandbox.clientId,
    LOCAL_SECRETS_FILE: secretsFile,
    ...extra,
  });
}
