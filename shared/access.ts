import type { TokenCredential } from '@azure/identity';
import type { Agent } from 'node:https';
import { ClientCredentialsProvider, type ClientCredentialsOptions } from './auth/client-credentials';
import { asPerson, DelegatedSession } from './auth/delegated-session';
import { tenantEndpoints } from './auth/endpoints';
import { systemClock, type Clock } from './clock';
import type { AppConfig, TenantSettings } from './config';
import { ConfigError } from './errors';
import { TenantGraphqlClient, type GraphqlClientOptions } from './graphql/client';
import { silentLogger, type Logger } from './log';
import { Pacer } from './net/pacer';
import { createSecretStore, type CachedSecretStore } from './secrets';
import {
  FileSessionMetadataStore,
  SESSION_TABLE,
  TableSessionMetadataStore,
  type SessionMetadataStore,
} from './state/session-metadata';
import { tableClientOnUse } from './state/table-service';
import { dirname, join } from 'node:path';

export interface AccessDeps {
  clock?: Clock;
  logger?: Logger;
  fetch?: typeof fetch;
  credential?: TokenCredential;
  keyVaultAgent?: Agent;
  secrets?: CachedSecretStore;
  sessionMetadata?: SessionMetadataStore;
  tokenOptions?: ClientCredentialsOptions;
  graphqlOptions?: GraphqlClientOptions;
}

/** Everything that talks to the tenant, built once per process and shared by every function. */
export interface AccessLayer {
  tenant: TenantSettings;
  secrets: CachedSecretStore;
  /** Where delegated refresh tokens and device codes live (the vault the app may write to). */
  sessionSecrets: CachedSecretStore;
  m2m: ClientCredentialsProvider;
  /** Read-only GraphQL with the M2M credential. */
  graphql: TenantGraphqlClient;
  delegated: DelegatedSession;
  /** GraphQL acting as the logged-in admin: the only client that may run mutations. */
  delegatedGraphql: TenantGraphqlClient;
  /** GraphQL with the delegated session only while it is `person`'s (an import's admin). */
  delegatedGraphqlAs(person: string): TenantGraphqlClient;
}

function metadataStore(config: AppConfig, deps: AccessDeps): SessionMetadataStore {
  if (deps.sessionMetadata) return deps.sessionMetadata;
  // Built on first use: most runs (a sync, an export) never read the session, and need not load the tables SDK.
  const table = tableClientOnUse(config, SESSION_TABLE, deps.credential);
  if (table) return new TableSessionMetadataStore(table);
  return new FileSessionMetadataStore(join(dirname(config.localSecretsFile), 'sessions.json'));
}

export function createAccessLayer(config: AppConfig, deps: AccessDeps = {}): AccessLayer {
  const tenant = config.tenant;
  if (!tenant) {
    throw new ConfigError([
      'TENANT_NAME, TENANT_BASE_URL, TENANT_AUTH_URL, TENANT_CLIENT_ID: not set. Set them for a real tenant, or run `tenant-integrations dev`, which starts the sandbox and sets them.',
    ]);
  }
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const vault = { clock, logger, credential: deps.credential, keyVaultAgent: deps.keyVaultAgent };
  const secrets = deps.secrets ?? createSecretStore(config, vault);
  // Delegated refresh tokens may live in their own vault (infra/: the app may write there, not here).
  const sessionSecrets =
    deps.secrets ??
    (config.keyVaultSessionsUrl && config.keyVaultSessionsUrl !== config.keyVaultUrl
      ? createSecretStore({ ...config, keyVaultUrl: config.keyVaultSessionsUrl }, vault)
      : secrets);
  const m2m = new ClientCredentialsProvider(tenant, secrets, config.clientSecretName, {
    clock,
    logger,
    fetch: deps.fetch,
    ...deps.tokenOptions,
  });
  const delegated = new DelegatedSession(tenant, sessionSecrets, metadataStore(config, deps), {
    clock,
    logger,
    fetch: deps.fetch,
  });
  const endpoint = tenantEndpoints(tenant).graphql;
  const gql = { clock, logger, fetch: deps.fetch, ...deps.graphqlOptions };
  // One pacer per credential (the tenant's rate is per token): every stream, export and activity in the process
  // shares what it learnt (shared/net/pacer.ts).
  const m2mPaced = { ...gql, pacer: deps.graphqlOptions?.pacer ?? new Pacer({ clock }) };
  const delegatedPaced = { ...gql, pacer: new Pacer({ clock }) };
  return {
    tenant,
    secrets,
    sessionSecrets,
    m2m,
    graphql: new TenantGraphqlClient(endpoint, m2m, m2mPaced),
    delegated,
    delegatedGraphql: new TenantGraphqlClient(endpoint, delegated, delegatedPaced),
    delegatedGraphqlAs: (person) =>
      new TenantGraphqlClient(endpoint, asPerson(delegated, person), delegatedPaced),
  };
}

let singleton: AccessLayer | undefined;

/** The process-wide access layer (lazy): one token cache for every trigger, orchestration and activity. */
export function accessLayer(config: AppConfig, deps?: AccessDeps): AccessLayer {
  singleton ??= createAccessLayer(config, deps);
  return singleton;
}
