import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { APP_SETTINGS } from '../../shared/app';
import {
  BICEP_SETTINGS,
  HOOK_VARIABLES,
  NOT_DEPLOYABLE,
  parameterVariables,
  passedThroughSettings,
  settingsToRestore,
} from '../../tools/app-settings';
import { deployRefusal, stagedBackendOf, switchRefusal } from '../../tools/durable-backend';
import { hostJsonFor } from '../../tools/package';
import { DERIVED, provisionValues } from '../../tools/provision';
import { readBicep } from '../helpers/bicep';

/*
 * Settings an operator chooses survive a provision from any machine: azd writes Bicep's outputs back into the
 * environment (after a provision, and on `azd env refresh` anywhere else), and the preprovision hook restores what
 * the deployment passed through. Bicep cannot run here: what it would output is computed from main.bicep's own
 * `output NAME type = parameter` lines, over the parameter file as azd substitutes it.
 */
const root = resolve(__dirname, '../..');
const main = readBicep(root, 'infra/main.bicep');
const parametersFile = readFileSync(join(root, 'infra/main.parameters.json'), 'utf8');

/** azd (drone/envsubst): `${NAME=default}` is the value, or the default when unset or empty. */
const substitute = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(
      JSON.parse(
        parametersFile.replace(
          /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^}]*))?\}/g,
          (_, name: string, d?: string) => (env[name] ? (env[name] as string) : (d ?? '')),
        ),
      ).parameters as Record<string, { value: string }>,
    ).map(([name, p]) => [name, p.value]),
  );

/** What azd writes back after a provision: each output that is a parameter, as the deployment got it. */
const outputsOf = (parameters: Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    main.outputs.flatMap((o) => (o.value in parameters ? [[o.name, parameters[o.value]]] : [])),
  );

/** The azd environment after the preprovision hook ran on it. */
async function provisioned(env: Record<string, string | undefined>) {
  return { ...env, ...(await provisionValues(env)) };
}

// azd's own per machine: the environment's name (`azd env new NAME`), the person or pipeline signed in.
const AZD_OWN = ['AZURE_ENV_NAME', 'AZURE_PRINCIPAL_ID', 'AZURE_PRINCIPAL_TYPE'];

const chosen: Record<string, string> = {
  AZURE_ENV_NAME: 'prod',
  AZURE_LOCATION: 'swedencentral',
  AZURE_PRINCIPAL_ID: '11111111-1111-1111-1111-111111111111',
  AZURE_RESOURCE_SUFFIX: 'a1b2c3',
  TENANT_NAME: 'contoso',
  TENANT_BASE_URL: 'https://contoso.example.com',
  TENANT_AUTH_URL: 'https://login.example.com',
  TENANT_CLIENT_ID: 'm2m',
  TENANT_CLIENT_SECRET_NAME: 'contoso-secret',
  SYNC_SCHEDULE: '0 0 */2 * * *',
  SYNC_STREAMS: 'controls,kpis',
  SYNC_SINKS: 'blob,delta,webhook',
  DOWNSTREAM_WEBHOOK_URL: 'https://receiver.example.com/hook',
  EXPORTS_MAX_CONCURRENT: '5',
  MANAGE_ENTRA_CLIENT_ID: '22222222-2222-2222-2222-222222222222',
  ALERT_EMAIL: 'ops@example.com',
  POSTGRES_HOST: '',
  POSTGRES_DATABASE: 'warehouse',
  SYNC_FORMAT: 'parquet',
  IMPORTS_RETENTION_DAYS: '45',
  IMPORT_OPERATIONS_FILE: 'config/import-operations.json',
  IMPORTS_REQUEST_SECRET_NAME: 'imports-signing',
  DURABLE_BACKEND: 'scheduler',
  DURABLE_ALWAYS_READY: '0',
  VNET_ENABLED: 'true',
  LOG_ANALYTICS_DAILY_CAP_GB: '3',
  // Passed through APP_SETTINGS_BASE64: the schema's and the host's own.
  DELTA_URL: 'https://lake.blob.core.windows.net/tables/tenant',
  SYNC_SCHEMA_CHANGES: 'propagate',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com',
  OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME: 'otlp-headers',
  AzureFunctionsJobHost__logging__logLevel__default: 'Warning',
};

describe('settings that survive any machine', () => {
  it('every variable the parameter file reads comes back: a Bicep output of its name, derived again, or azd’s own', () => {
    const outputs = new Map(main.outputs.map((o) => [o.name, o.value]));
    const read = parameterVariables(root);
    const parameterOf = Object.fromEntries(
      [...parametersFile.matchAll(/"(\w+)": \{ "value": "\$\{(\w+)/g)].map((m) => [m[2], m[1]]),
    );
    const restoredBy = read.map((v) =>
      outputs.get(v) === parameterOf[v]
        ? 'output'
        : (DERIVED as readonly string[]).includes(v)
          ? 'derived'
          : AZD_OWN.includes(v)
            ? 'azd'
            : 'lost',
    );
    expect(read.filter((_, i) => restoredBy[i] === 'lost')).toEqual([]);
    // The lists compared whole: each output of an environment variable is the very parameter that variable feeds.
    expect(read.filter((_, i) => restoredBy[i] === 'output').sort()).toEqual(
      main.outputs
        .filter((o) => parameterOf[o.name] === o.value)
        .map((o) => o.name)
        .sort(),
    );
    // The passed-through settings ride on APP_SETTINGS_BASE64: derived, and an output as well.
    expect(outputs.get('APP_SETTINGS_BASE64')).toBe('appSettingsBase64');
  });

  it('a second machine (`azd env refresh`, then provision) deploys exactly what the first did', async () => {
    const first = await provisioned(chosen);
    const firstParameters = substitute(first);
    expect(firstParameters.vnetEnabled).toBe('true');
    expect(JSON.parse(Buffer.from(firstParameters.appSettingsBase64, 'base64').toString())).toMatchObject({
      DELTA_URL: chosen.DELTA_URL,
      AzureFunctionsJobHost__logging__logLevel__default: 'Warning',
    });
    // Another machine: a new environment of the same name, its values from the deployment's outputs only.
    const refreshed = {
      AZURE_ENV_NAME: 'prod',
      AZURE_PRINCIPAL_ID: '33333333-3333-3333-3333-333333333333',
      PROVISIONED_DURABLE_BACKEND: 'scheduler',
      ...outputsOf(firstParameters),
    };
    const second = await provisioned(refreshed);
    const secondParameters = substitute(second);
    const { principalId: a, ...deployedFirst } = firstParameters;
    const { principalId: b, ...deployedSecond } = secondParameters;
    expect(deployedSecond).toEqual(deployedFirst);
    expect([a, b]).toEqual([chosen.AZURE_PRINCIPAL_ID, '33333333-3333-3333-3333-333333333333']);
    // Each passed-through setting is back in the environment by name, so the one after that keeps it too.
    expect(second).toMatchObject({ DELTA_URL: chosen.DELTA_URL, SYNC_SCHEMA_CHANGES: 'propagate' });
    // Without the outputs (the old template), the same machine would have deployed the defaults: the test can fail.
    const bare = substitute(await provisioned({ AZURE_ENV_NAME: 'prod', AZURE_RESOURCE_SUFFIX: 'a1b2c3' }));
    expect(bare.durableBackend).toBe('storage');
    expect(bare.alertEmail).toBe('');
  });

  it('a setting cleared on purpose (`azd env set NAME ""`) stays cleared; one never set is taken from the deployment', () => {
    const deployed = Buffer.from(
      JSON.stringify({ DELTA_URL: 'https://a.blob.core.windows.net/t', SYNC_SCHEMA_CHANGES: 'propagate' }),
    ).toString('base64');
    expect(settingsToRestore({ APP_SETTINGS_BASE64: deployed, DELTA_URL: '' })).toEqual({
      SYNC_SCHEMA_CHANGES: 'propagate',
    });
    expect(
      settingsToRestore({ APP_SETTINGS_BASE64: deployed, DELTA_URL: 'https://b.blob.core.windows.net/t' }),
    ).toEqual({
      SYNC_SCHEMA_CHANGES: 'propagate',
    });
    // Only what may pass: a setting Bicep sets itself, or one that never goes to Azure, is not taken from it.
    const odd = Buffer.from(
      JSON.stringify({ TENANT_NAME: 'x', POSTGRES_URL: 'postgres://u:p@h/d' }),
    ).toString('base64');
    expect(settingsToRestore({ APP_SETTINGS_BASE64: odd })).toEqual({});
    expect(() => settingsToRestore({ APP_SETTINGS_BASE64: 'bm90IGpzb24=' })).toThrow(/azd env refresh/);
    expect(() => settingsToRestore({ APP_SETTINGS_BASE64: Buffer.from('[1]').toString('base64') })).toThrow(
      /not what the preprovision hook writes/,
    );
  });

  it('the host’s own settings pass through, except the durable backend’s, which DURABLE_BACKEND decides', () => {
    expect(
      passedThroughSettings({
        AzureFunctionsJobHost__functionTimeout: '00:20:00',
        AZUREFUNCTIONSJOBHOST__LOGGING__LOGLEVEL__DEFAULT: 'Information',
      }),
    ).toEqual({
      AzureFunctionsJobHost__functionTimeout: '00:20:00',
      AZUREFUNCTIONSJOBHOST__LOGGING__LOGLEVEL__DEFAULT: 'Information',
    });
    expect(() =>
      passedThroughSettings({
        AzureFunctionsJobHost__extensions__durableTask__storageProvider__type: 'mssql',
      }),
    ).toThrow(/follow DURABLE_BACKEND/);
  });
});

describe('one durable backend for the package and the deployment', () => {
  const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8'));

  it('a switch nobody asked for is refused at provision and package time, both backends named', async () => {
    expect(switchRefusal({ PROVISIONED_DURABLE_BACKEND: 'storage', DURABLE_BACKEND: 'scheduler' })).toMatch(
      /DURABLE_BACKEND is scheduler, but the deployed app keeps its orchestrations in storage.*DURABLE_BACKEND_MIGRATE/,
    );
    expect(switchRefusal({ PROVISIONED_DURABLE_BACKEND: 'scheduler' })).toMatch(
      /DURABLE_BACKEND is storage.*in scheduler/,
    );
    expect(
      switchRefusal({
        PROVISIONED_DURABLE_BACKEND: 'storage',
        DURABLE_BACKEND: 'scheduler',
        DURABLE_BACKEND_MIGRATE: 'true',
      }),
    ).toBeUndefined();
    expect(switchRefusal({ DURABLE_BACKEND: 'scheduler' })).toBeUndefined(); // nothing deployed yet
    await expect(provisionValues({ ...chosen, PROVISIONED_DURABLE_BACKEND: 'storage' })).rejects.toThrow(
      /DURABLE_BACKEND is scheduler, but the deployed app keeps its orchestrations in storage/,
    );
    expect(HOOK_VARIABLES).toContain('DURABLE_BACKEND_MIGRATE');
  });

  it('a package for one backend is refused against a deployment of the other, whatever the environment now says', () => {
    const scheduler = stagedBackendOf(hostJsonFor(host, 'scheduler'));
    const storage = stagedBackendOf(hostJsonFor(host, 'storage'));
    expect([scheduler, storage]).toEqual(['scheduler', 'storage']);
    // `azd env set DURABLE_BACKEND scheduler`, then `azd deploy` alone: the app still runs on storage.
    expect(
      deployRefusal({ DURABLE_BACKEND: 'scheduler', PROVISIONED_DURABLE_BACKEND: 'storage' }, scheduler),
    ).toMatch(/staged for scheduler .*provisioned for storage.*would not start/);
    expect(deployRefusal({ PROVISIONED_DURABLE_BACKEND: 'scheduler' }, storage)).toMatch(
      /staged for storage.*provisioned for scheduler/,
    );
    expect(deployRefusal({ PROVISIONED_DURABLE_BACKEND: 'scheduler' }, scheduler)).toBeUndefined();
    expect(deployRefusal({}, storage)).toMatch(/PROVISIONED_DURABLE_BACKEND is not in the azd environment/);
    expect(main.outputs.find((o) => o.name === 'PROVISIONED_DURABLE_BACKEND')?.value).toBe('durableBackend');
  });
});

describe('every documented setting is deployable, or says why not', () => {
  // Words in capitals the docs use that are not settings: SQL and Delta verbs, GraphQL servers' values and error codes, Entra's,
  // Linux's, and what only the tests and benches read.
  const NOT_SETTINGS = new Set([
    'COPY',
    'POST',
    'DELETE',
    'UUID',
    'OPTIMIZE',
    'VACUUM',
    'CHECKPOINT',
    'PATH',
    'JSON_VALUE',
    'MAX_COMPLEXITY_EXCEEDED',
    'TOO_COMPLEX_QUERY',
    'QUERY_TOO_COMPLEX',
    'MAX_NODE_LIMIT_EXCEEDED',
    'MAX_COST_EXCEEDED',
    'HC0047',
    // GraphQL values a tenant's schema may have (docs/sync.md's dialects).
    'UPDATED_AT_DESC',
    'UPDATED_AT',
    'DOMAIN_RULE',
    'AADSTS700054',
    'AADSTS50011',
    'SCHED_IDLE',
    'CHROMIUM_PATH',
    'BENCH_PG_ROWS',
    'BENCH_PEERS_ROWS',
    'BENCH_PEERS_SANDBOX_ROWS',
    'HOST_QUEUE_LATENCY_MS',
  ]);
  const docs = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const named = [
    ...new Set(
      docs.flatMap((f) =>
        [...readFileSync(join(root, f), 'utf8').matchAll(/`([A-Z][A-Z0-9_]{3,}(?:__\w+)?)`/g)].map(
          (m) => m[1],
        ),
      ),
    ),
  ].filter((n) => !NOT_SETTINGS.has(n));

  it('each is in the configuration schema, a deployment variable, set by Bicep, or named as not deployable with why', () => {
    const schema = new Set(Object.keys(APP_SETTINGS.schema.shape));
    // The workflows' own variables (the login's, the preview principal's) count as the deployment's.
    const workflows = readdirSync(join(root, '.github/workflows')).flatMap((f) => [
      ...readFileSync(join(root, '.github/workflows', f), 'utf8').matchAll(/vars\.(\w+)/g),
    ]);
    const deployment = new Set([
      ...parameterVariables(root),
      ...HOOK_VARIABLES,
      ...main.outputs.map((o) => o.name),
      ...workflows.map((m) => m[1]),
    ]);
    const bicep = new Set([
      ...BICEP_SETTINGS,
      'DURABLE_TASK_HUB',
      'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
      'NODE_OPTIONS',
      'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
    ]);
    const where = (n: string) =>
      schema.has(n)
        ? 'schema'
        : deployment.has(n)
          ? 'deployment'
          : bicep.has(n)
            ? 'bicep'
            : n in NOT_DEPLOYABLE
              ? 'not deployable'
              : 'nowhere';
    expect(named.length).toBeGreaterThan(50);
    expect(named.filter((n) => where(n) === 'nowhere')).toEqual([]);
    // OTEL_EXPORTER_OTLP_HEADERS carries a credential: it is named, with the Key Vault way in its place.
    expect(NOT_DEPLOYABLE.OTEL_EXPORTER_OTLP_HEADERS).toMatch(/OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME/);
    expect(schema.has('OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME')).toBe(true);
    // docs/deploy.md lists what is not deployable, each by name.
    const deploy = readFileSync(join(root, 'docs/deploy.md'), 'utf8');
    expect(Object.keys(NOT_DEPLOYABLE).filter((n) => !deploy.includes(`\`${n}\``))).toEqual([]);
  });

  it('the hook refuses a credential in the azd environment, naming the Key Vault way', async () => {
    await expect(
      provisionValues({ ...chosen, OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s3cr3t' }),
    ).rejects.toThrow(/OTEL_EXPORTER_OTLP_HEADERS: .*OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME/);
    await expect(
      provisionValues({ ...chosen, OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s3cr3t' }),
    ).rejects.not.toThrow(/s3cr3t/);
  });
});
