import { IntegrationError } from '../errors';
import { LASTING_SESSION, type DoctorCheck } from '../feature';
import { short } from './short';

/** The app's own set-up: its settings, its secret store, its storage, the admin's session. */

const configuration: DoctorCheck['run'] = async ({ config, access }) => ({
  state: 'ok',
  found: `${
    config.tenant
      ? `valid; tenant ${access.tenant.name} at ${access.tenant.baseUrl}`
      : `valid; the embedded sandbox (${access.tenant.name})`
  }; ${config.hosting.azure ? 'in Azure' : 'not in Azure'} (${config.hosting.because})${config.development ? ', Development' : ''}`,
});

const secretStore: DoctorCheck['run'] = async ({ config, access }, signal) => {
  const where = config.keyVaultUrl
    ? `Key Vault ${config.keyVaultUrl}`
    : `the development file ${config.localSecretsFile}`;
  try {
    await access.secrets.get(config.clientSecretName, { abortSignal: signal });
    return { state: 'ok', found: `client secret "${config.clientSecretName}" present in ${where}` };
  } catch (err) {
    return {
      state: 'fail',
      found: short(err),
      action:
        err instanceof IntegrationError && err.code === 'secret_not_found'
          ? `Set it: tenant-integrations secrets set ${config.clientSecretName}${config.keyVaultUrl ? ' (with KEY_VAULT_URL set), or az keyvault secret set' : ''}.`
          : config.keyVaultUrl
            ? `Give the app’s identity the role Key Vault Secrets User on ${config.keyVaultUrl} (and check KEY_VAULT_URL).`
            : 'Check LOCAL_SECRETS_FILE and its permissions.',
    };
  }
};

const storage: DoctorCheck['run'] = async ({ config }, signal) => {
  if (!config.storageConnection && !config.storageServiceUris)
    return {
      state: 'warn',
      found: 'not configured: state and run history are kept in .local/',
      action: 'Set AzureWebJobsStorage (the local stack and Azure set it).',
    };
  // The storage SDKs load here, on first use: registering the doctor's route must not pay for them.
  const { tableClient } = await import('../state/table-service');
  const table = tableClient(config, 'doctorprobe');
  if (!table) return { state: 'warn', found: 'no table service configured' };
  await table.createTable({ abortSignal: signal });
  await table.deleteTable({ abortSignal: signal });
  const { blobService } = await import('../state/blob-service');
  await blobService(config).listContainers().byPage({ maxPageSize: 1 }).next();
  return {
    state: 'ok',
    found:
      'tables and blobs reachable with the app’s identity (queues: the Functions host reports them at start)',
  };
};

const delegatedSession: DoctorCheck['run'] = async ({ access, embeddedSandbox }) => {
  if (embeddedSandbox)
    return {
      ...LASTING_SESSION,
      found:
        'not looked for: an embedded sandbox lasts one command, and so does any admin session signed in to it',
    };
  const session = await access.delegated.status();
  // Syncs and exports never need one: only mutations do. A lost session is a failure; none yet is not.
  if (!session)
    return {
      state: 'ok',
      found:
        'none: no admin has signed in (only mutations need one; sign in on the admin page when they are needed)',
    };
  if (session.state === 'login-required')
    return {
      state: 'fail',
      found: `needs a new login (${session.reason ?? 'the session ended'})`,
      action: 'Sign in again on the admin page (/api/manage) or with tenant-integrations login.',
    };
  return {
    state: 'ok',
    found: `connected as ${session.username}; refresh token valid until ${session.refreshExpiresAt}`,
  };
};

export const SETUP_CHECKS: readonly DoctorCheck[] = [
  { name: 'configuration', run: configuration },
  { name: 'secret store', run: secretStore },
];
export const STORAGE_CHECKS: readonly DoctorCheck[] = [
  { name: 'storage', run: storage },
  { name: 'delegated session', run: delegatedSession },
];
