import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AccessLayer } from '../access';
import { tenantEndpoints } from '../auth/endpoints';
import type { AppConfig } from '../config';
import { CredentialRejected, IntegrationError, RequestRefused } from '../errors';
import { nodePost } from '../net/http';
import { withTimeout } from '../net/retry';

/**
 * `tenant-integrations doctor` and GET /api/manage/doctor: every set-up check in order, each ok / warn / fail
 * with what was found and the one action that fixes it. Never a secret or token in any field: a check says
 * whether a secret is there, not what it is.
 */
export interface Check {
  name: string;
  state: 'ok' | 'warn' | 'fail';
  found: string;
  action?: string;
}

export interface DoctorOptions {
  /** Per check (default 10 s). */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
}

const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];

async function getJson(url: string, signal: AbortSignal) {
  // Discovery carries no credential; still, no redirect is followed (an unexpected one is a finding).
  const res = await fetch(url, { signal, redirect: 'manual' });
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  return { status: res.status, body };
}

export function apiCredentialsPage(config: AppConfig): string {
  return config.tenant ? `${config.tenant.baseUrl}/${config.tenant.name}/` : 'the tenant portal';
}

/** Runs every check; `configuration` is assumed valid (the caller reports a ConfigError itself). */
export async function runDoctor(
  config: AppConfig,
  access: AccessLayer,
  options: DoctorOptions = {},
): Promise<Check[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const checks: Check[] = [];
  const step = async (name: string, run: (signal: AbortSignal) => Promise<Omit<Check, 'name'>>) => {
    const signal = withTimeout(timeoutMs, options.abortSignal);
    try {
      checks.push({ name, ...(await run(signal)) });
    } catch (err) {
      checks.push({
        name,
        state: 'fail',
        found: signal.aborted ? `no answer within ${timeoutMs / 1000} s` : short(err),
        action:
          err instanceof IntegrationError ? undefined : 'See the finding; run again with the fix in place.',
      });
    }
  };
  const tenant = access.tenant;
  const portal = apiCredentialsPage(config);

  checks.push({
    name: 'configuration',
    state: 'ok',
    found: config.tenant
      ? `valid; tenant ${tenant.name} at ${tenant.baseUrl}`
      : `valid; the embedded sandbox (${tenant.name})`,
  });

  let secretOk = false;
  await step('secret store', async (signal) => {
    const where = config.keyVaultUrl
      ? `Key Vault ${config.keyVaultUrl}`
      : `the development file ${config.localSecretsFile}`;
    try {
      await access.secrets.get(config.clientSecretName, { abortSignal: signal });
      secretOk = true;
      return { state: 'ok', found: `client secret "${config.clientSecretName}" present in ${where}` };
    } catch (err) {
      return {
        state: 'fail',
        found: short(err),
        action:
          err instanceof IntegrationError && err.code === 'SECRET_NOT_FOUND'
            ? `Set it: tenant-integrations secrets set ${config.clientSecretName}${config.keyVaultUrl ? ' (with KEY_VAULT_URL set), or az keyvault secret set' : ''}.`
            : config.keyVaultUrl
              ? `Give the app’s identity the role Key Vault Secrets User on ${config.keyVaultUrl} (and check KEY_VAULT_URL).`
              : 'Check LOCAL_SECRETS_FILE and its permissions.',
      };
    }
  });

  let idpOk = false;
  await step('identity provider', async (signal) => {
    const url = tenantEndpoints(tenant).discovery;
    const { status, body } = await getJson(url, signal);
    const endpoint = (body as { token_endpoint?: unknown } | undefined)?.token_endpoint;
    if (status === 200 && typeof endpoint === 'string') {
      idpOk = true;
      return { state: 'ok', found: `discovery answers at ${url}` };
    }
    return {
      state: 'fail',
      found: `discovery at ${url} answered HTTP ${status}${status === 404 ? ' (no such realm)' : ''}`,
      action: 'Check TENANT_AUTH_URL and TENANT_NAME: the realm is the tenant name.',
    };
  });

  let tokenOk = false;
  await step('client credentials', async (signal) => {
    if (!secretOk || !idpOk)
      return {
        state: 'warn',
        found: 'not tried: the secret or the identity provider is not available',
        action: 'Fix the checks above first.',
      };
    try {
      await access.m2m.getToken({ abortSignal: signal });
      tokenOk = true;
      return { state: 'ok', found: `credential ${tenant.clientId} accepted (client_credentials)` };
    } catch (err) {
      if (!(err instanceof CredentialRejected)) throw err;
      return err.oauthError === 'unauthorized_client'
        ? {
            state: 'fail',
            found: `credential ${tenant.clientId} refused: unauthorized_client`,
            action: `The secret is wrong or was rotated: copy the current one from the API Credentials page (${portal}, Settings → API Credentials) and store it with tenant-integrations secrets set ${config.clientSecretName}.`,
          }
        : {
            state: 'fail',
            found: `credential ${tenant.clientId} refused: ${err.oauthError}`,
            action: `The credential is unknown or revoked: create one on the API Credentials page (${portal}, Settings → API Credentials) and set TENANT_CLIENT_ID and the secret. If the portal has no API Credentials page, the organisation has not enabled M2M credentials: ask the provider’s support to enable them.`,
          };
    }
  });

  await step('GraphQL', async (signal) => {
    if (!tokenOk) return { state: 'warn', found: 'not tried: no token', action: 'Fix the credential first.' };
    const data = (await access.graphql.request<{ tenant: { name: string } | null }>(
      'query DoctorTenant($name: String!) { tenant(name: $name) { name } }',
      { variables: { name: tenant.name }, abortSignal: signal },
    )) ?? { tenant: null };
    if (data.tenant?.name === tenant.name)
      return { state: 'ok', found: `${tenant.baseUrl}/graphql answers; tenant { name } is ${tenant.name}` };
    return {
      state: 'fail',
      found: `${tenant.baseUrl}/graphql does not know tenant ${tenant.name}`,
      action: 'Check TENANT_NAME and TENANT_BASE_URL: they must name the same organisation.',
    };
  });

  await step('read-only credential', async (signal) => {
    try {
      await access.graphql.request('mutation DoctorProbe { __typename }', { abortSignal: signal });
      return {
        state: 'fail',
        found: 'a mutation was sent with the M2M credential',
        action: 'This is a defect: M2M credentials are read-only; report it.',
      };
    } catch (err) {
      if (err instanceof RequestRefused && err.code === 'READ_ONLY_CREDENTIAL')
        return {
          state: 'ok',
          found: 'mutations with the M2M credential are refused before the network, as the service requires',
        };
      throw err;
    }
  });

  await step('storage', async (signal) => {
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
    const blobs = blobService(config);
    const iter = blobs.listContainers().byPage({ maxPageSize: 1 });
    await iter.next();
    return {
      state: 'ok',
      found:
        'tables and blobs reachable with the app’s identity (queues: the Functions host reports them at start)',
    };
  });

  await step('delegated session', async () => {
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
  });

  for (const spec of config.syncSinks
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    await step(`sink ${spec.split(':')[0]}`, async (signal) => {
      if (spec === 'blob') return { state: 'ok', found: 'Blob Storage: see the storage check' };
      if (spec === 'webhook') {
        if (!config.downstreamWebhookUrl)
          return {
            state: 'fail',
            found: 'SYNC_SINKS names webhook but DOWNSTREAM_WEBHOOK_URL is not set',
            action: 'Set DOWNSTREAM_WEBHOOK_URL.',
          };
        // An empty POST without a signature: any HTTP answer means the receiver is there (it should refuse it).
        const res = await nodePost(config.downstreamWebhookUrl, '', {
          abortSignal: signal,
          maxBytes: 4096,
          beyondMax: 'drop',
        });
        return res.status < 500
          ? {
              state: 'ok',
              found: `${new URL(config.downstreamWebhookUrl).origin} answers (HTTP ${res.status} to an unsigned probe)`,
            }
          : {
              state: 'fail',
              found: `${new URL(config.downstreamWebhookUrl).origin} answered HTTP ${res.status}`,
              action: 'Fix the receiver; the sync retries its pages.',
            };
      }
      if (spec.startsWith('dir:')) {
        const dir = resolve(spec.slice(4));
        await mkdir(dir, { recursive: true });
        const probe = join(dir, `.doctor-${process.pid}`);
        await writeFile(probe, '');
        await rm(probe);
        return { state: 'ok', found: `${dir} is writable` };
      }
      if (spec === 'postgres') {
        if (!config.postgres)
          return {
            state: 'fail',
            found: 'SYNC_SINKS names postgres but neither POSTGRES_URL nor POSTGRES_HOST is set',
            action: 'Set POSTGRES_URL, or POSTGRES_HOST and POSTGRES_USER.',
          };
        // The driver loads here, on first use, like the sink's own.
        const { postgresPool } = await import('../state/postgres');
        const pool = postgresPool(config, access.secrets);
        try {
          await pool.query('SELECT 1');
        } finally {
          await pool.end();
        }
        const where = config.postgres.host ?? new URL(config.postgres.url ?? '').host;
        return { state: 'ok', found: `PostgreSQL at ${where} accepts the app’s sign-in` };
      }
      return {
        state: 'fail',
        found: `unknown sink "${spec}"`,
        action: 'SYNC_SINKS takes blob, webhook, postgres and dir:PATH.',
      };
    });
  }
  return checks;
}

export const doctorFailed = (checks: Check[]) => checks.some((c) => c.state === 'fail');
