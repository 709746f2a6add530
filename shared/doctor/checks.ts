import type { GraphQLSchema } from 'graphql';
import type { AccessLayer } from '../access';
import { tenantEndpoints } from '../auth/endpoints';
import { CATALOG_SETTINGS } from '../catalog/settings';
import { partOf, type AppConfig } from '../config';
import {
  actionFor,
  bounded,
  codeOf,
  CredentialRejected,
  GraphqlErrors,
  IntegrationError,
  RequestRefused,
} from '../errors';
import type { StreamDefinition } from '../streams';
import { withTimeout } from '../net/retry';
import { sinkModule, type SinkModule } from '../sinks';
import type { Check, CheckOutcome } from '../check';

export type { Check } from '../check';

/**
 * `tenant-integrations doctor` and GET /api/manage/doctor: every set-up check in order, each ok / warn / fail
 * with what was found and the one action that fixes it. Never a secret or token in any field: a check says
 * whether a secret is there, not what it is.
 */
export interface DoctorOptions {
  /** Per check (default 10 s). */
  timeoutMs?: number;
  abortSignal?: AbortSignal;
  /**
   * The tenant is a sandbox started for this command alone (the CLI with nothing configured and no local stack):
   * no admin session outlasts it, so none is looked for.
   */
  embeddedSandbox?: boolean;
  /** The tenant is the local sandbox (embedded, or `npm start`'s): its built-in import operations apply, as there. */
  localSandbox?: boolean;
}

/** What every check is given: the settings, the access layer, and which earlier checks passed. */
interface DoctorContext {
  config: AppConfig;
  access: AccessLayer;
  passed: Set<string>;
  embeddedSandbox: boolean;
  localSandbox: boolean;
}

/** What an embedded sandbox's admin session would need: a tenant that lasts longer than one command. */
const LASTING_SESSION = {
  state: 'warn',
  action:
    'Run `npm start`, then `tenant-integrations login` against it in another terminal — or set TENANT_* for a real tenant.',
} as const;

type CheckRun = (ctx: DoctorContext, signal: AbortSignal) => Promise<CheckOutcome>;

const short = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];

export function apiCredentialsPage(config: AppConfig): string {
  return config.tenant ? `${config.tenant.baseUrl}/${config.tenant.name}/` : 'the tenant portal';
}

const configuration: CheckRun = async ({ config, access }) => ({
  state: 'ok',
  found: `${
    config.tenant
      ? `valid; tenant ${access.tenant.name} at ${access.tenant.baseUrl}`
      : `valid; the embedded sandbox (${access.tenant.name})`
  }; ${config.hosting.azure ? 'in Azure' : 'not in Azure'} (${config.hosting.because})${config.development ? ', Development' : ''}`,
});

const secretStore: CheckRun = async ({ config, access }, signal) => {
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

const identityProvider: CheckRun = async ({ access }, signal) => {
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

const clientCredentials: CheckRun = async ({ config, access, passed }, signal) => {
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

const graphql: CheckRun = async ({ access, passed }, signal) => {
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

const readOnly: CheckRun = async ({ access }, signal) => {
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

const storage: CheckRun = async ({ config }, signal) => {
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

const delegatedSession: CheckRun = async ({ access, embeddedSandbox }) => {
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

/**
 * The catalog held against the tenant's schema: one check per stream, naming each field that is gone and each
 * the stream does not read (SYNC_STREAMS_FILE, else the stored catalog; none yet is what the first run discovers).
 */
async function catalogChecks(ctx: DoctorContext, signal: AbortSignal): Promise<Check[]> {
  if (!ctx.passed.has('GraphQL'))
    return [
      {
        name: 'catalog',
        state: 'warn',
        found: 'not tried: GraphQL did not answer',
        action: 'Fix GraphQL first.',
      },
    ];
  const { catalogStreams, storedCatalog } = await import('../catalog');
  const { introspect } = await import('../catalog/introspect');
  const { driftOf } = await import('../catalog/drift');
  const { selectStreams } = await import('../streams');
  const { catalogStore } = await import('../state/catalog-store');
  const tenant = ctx.access.tenant.name;
  const state = catalogStore(ctx.config);
  const settings = partOf(ctx.config, CATALOG_SETTINGS);
  let schema: GraphQLSchema | undefined;
  let refused = false;
  try {
    schema = await introspect(ctx.access.graphql, { abortSignal: signal });
  } catch (err) {
    if (!(err instanceof IntegrationError && err.code === 'introspection_refused')) throw err;
    refused = true;
  }
  const file = settings.streamsFile;
  const stored = file ? undefined : await storedCatalog(state, tenant);
  if (!file && !stored) {
    if (refused)
      return [
        {
          name: 'catalog',
          state: 'fail',
          found:
            'no SYNC_STREAMS_FILE and the tenant refuses introspection: there is nothing to discover the streams from',
          action:
            'Write the streams in a file named by SYNC_STREAMS_FILE (docs/sync.md, “When introspection is refused”).',
        },
      ];
    const { discover } = await import('../catalog');
    const found = await discover(ctx.access.graphql, { abortSignal: signal });
    const streams = found.streams.map((p) => p.stream);
    return [
      {
        name: 'catalog',
        state: 'ok',
        found: `none stored yet: the first run discovers ${streams.length} streams (${streams.map((s) => s.name).join(', ')}); \`tenant-integrations discover\` shows them`,
      },
    ];
  }
  const streams = selectStreams(
    file
      ? (
          await catalogStreams({
            graphql: ctx.access.graphql,
            state,
            tenant,
            streamsFile: file,
            now: Date.now,
          })
        ).streams
      : (stored?.streams ?? []),
    settings.streams,
  );
  const where = file ? `SYNC_STREAMS_FILE ${file}` : 'the stored catalog';
  if (refused) return firstPages(ctx, streams, where, signal);
  const { schemaProblems } = await import('../catalog/introspect');
  const { invalidTouched } = await import('../catalog/drift');
  const { invalidMessage } = await import('../catalog');
  const problems = schemaProblems(schema as GraphQLSchema);
  const invalid: Check[] = problems.length
    ? [
        {
          name: 'tenant schema',
          state: 'warn',
          found: `graphql-js calls it invalid in ${problems.length} place${problems.length === 1 ? '' : 's'}: ${problems
            .slice(0, 3)
            .map((p) => p.message)
            .join('; ')}; only a stream that reads there is held back`,
          action: actionFor('schema_invalid'),
        },
      ]
    : [];
  return invalid.concat(
    streams.map((s): Check => {
      const touched = invalidTouched(schema as GraphQLSchema, s, problems);
      if (touched.length)
        return {
          name: `stream ${s.name}`,
          state: 'fail',
          found: invalidMessage(touched),
          action: actionFor('schema_invalid'),
        };
      const d = driftOf(schema as GraphQLSchema, s);
      if (d.removed.length || d.problems.length)
        return {
          name: `stream ${s.name}`,
          state: 'fail',
          found: `the tenant's schema changed: ${[...(d.removed.length ? [`no longer has ${d.removed.join(', ')}`] : []), ...d.problems.slice(0, 3)].join('; ')}`,
          action:
            'Run `tenant-integrations discover` and take the new catalog (or edit SYNC_STREAMS_FILE), or set SYNC_SCHEMA_CHANGES=propagate.',
        };
      if (d.added.length)
        return {
          name: `stream ${s.name}`,
          state: 'warn',
          found: `validates (${where}); the tenant has fields it does not read: ${d.added.join(', ')}`,
          action:
            '`tenant-integrations discover` proposes them; SYNC_SCHEMA_CHANGES=propagate takes them by itself.',
        };
      return {
        name: `stream ${s.name}`,
        state: 'ok',
        found: `validates against the tenant's schema (${where})`,
      };
    }),
  );
}

/**
 * Where the tenant refuses introspection, each stream is held against the tenant by reading its first page (one
 * record), one stream after the other: a field the tenant does not know is named, as a run's first page would.
 */
async function firstPages(
  ctx: DoctorContext,
  streams: StreamDefinition[],
  where: string,
  signal: AbortSignal,
): Promise<Check[]> {
  const { paginate } = await import('../graphql/pager');
  const { removedFromErrors } = await import('../catalog/drift');
  const checks: Check[] = [];
  for (const s of streams) {
    const name = `stream ${s.name}`;
    try {
      const pages = paginate(ctx.access.graphql, s, { pageSize: 1, abortSignal: signal });
      await pages.next();
      await pages.return(undefined);
      checks.push({
        name,
        state: 'ok',
        found: `its first page reads (${where}; the tenant refuses introspection, so it was checked by reading)`,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      const gone = err instanceof GraphqlErrors ? removedFromErrors(err.errors.map((e) => e.message)) : [];
      checks.push(
        gone.length
          ? {
              name,
              state: 'fail',
              found: `the tenant does not know ${gone.map((g) => `${g.type}.${g.field}`).join(', ')} (read from its first page: introspection is refused)`,
              action: `Fix the stream in ${where}: take those fields out or correct their names (docs/sync.md, “When introspection is refused”).`,
            }
          : {
              name,
              state: 'fail',
              found: `its first page fails: ${bounded(err instanceof Error ? err.message : String(err), 300)}`,
              action: actionFor(codeOf(err)),
            },
      );
    }
  }
  return checks;
}

/** The checks in the order they run: each later one may depend on an earlier one having passed. */
const CHECKS: ReadonlyArray<readonly [string, CheckRun]> = [
  ['configuration', configuration],
  ['secret store', secretStore],
  ['identity provider', identityProvider],
  ['client credentials', clientCredentials],
  ['GraphQL', graphql],
  ['read-only credential', readOnly],
  ['storage', storage],
  ['delegated session', delegatedSession],
];

/** Runs every check, then each configured sink's own; `configuration` is assumed valid (the caller reports a ConfigError). */
export async function runDoctor(
  config: AppConfig,
  access: AccessLayer,
  options: DoctorOptions = {},
): Promise<Check[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const ctx: DoctorContext = {
    config,
    access,
    passed: new Set(),
    embeddedSandbox: options.embeddedSandbox ?? false,
    localSandbox: options.localSandbox ?? options.embeddedSandbox ?? false,
  };
  const checks: Check[] = [];
  const run = async (name: string, check: CheckRun) => {
    let signal: AbortSignal | undefined;
    let outcome: CheckOutcome;
    try {
      outcome = await withTimeout(timeoutMs, options.abortSignal, (s) => check(ctx, (signal = s)));
    } catch (err) {
      outcome = {
        state: 'fail',
        found: signal?.aborted ? `no answer within ${timeoutMs / 1000} s` : short(err),
        action:
          err instanceof IntegrationError ? undefined : 'See the finding; run again with the fix in place.',
      };
    }
    if (outcome.state === 'ok') ctx.passed.add(name);
    checks.push({ name, ...outcome });
  };
  for (const [name, check] of CHECKS) await run(name, check);
  let signal: AbortSignal | undefined;
  try {
    checks.push(
      ...(await withTimeout(timeoutMs * 3, options.abortSignal, (s) => catalogChecks(ctx, (signal = s)))),
    );
  } catch (err) {
    checks.push({
      name: 'catalog',
      state: 'fail',
      found: signal?.aborted ? `no answer within ${(timeoutMs * 3) / 1000} s` : short(err),
      ...(err instanceof IntegrationError
        ? {}
        : { action: 'See the finding; run again with the fix in place.' }),
    });
  }
  const sinkContext = { config, secrets: access.secrets };
  for (const spec of config.sinkSpecs)
    await run(`sink ${spec.kind}`, (_ctx, signal) =>
      (sinkModule(spec.kind) as SinkModule).doctor(spec, sinkContext, signal),
    );
  return checks;
}

export const doctorFailed = (checks: Check[]) => checks.some((c) => c.state === 'fail');
