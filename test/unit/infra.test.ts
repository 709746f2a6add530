import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import ignore from 'ignore';
import { parse as parseYaml } from 'yaml';
import { APP_SETTINGS, loadConfig } from '../../shared/app';
import { ALERT_RECORDS } from '../../shared/log/alerts';
import { APP_NODE_OPTIONS } from '../../shared/node-flags';
import {
  appSettingsParameter,
  BICEP_SETTINGS,
  importableVariables,
  NOT_IN_AZURE,
  parameterVariables,
  PASSED_THROUGH,
  passedThroughSettings,
} from '../../tools/app-settings';
import { durableBackendOf, hostJsonFor } from '../../tools/package';
import {
  ACCEPTED_WINDOW_MINUTES,
  DERIVED,
  FAILED_SYNCS_IN_A_ROW,
  BACKEND_TAG,
  resourceGroupName,
  SUFFIX_TAG,
  variablesToImport,
} from '../../tools/provision';
import { block, objectKeys, prop, readBicep, type BicepFile } from '../helpers/bicep';
import { partOf } from '../../shared/config';
import { IMPORT_SETTINGS } from '../../shared/imports/settings';

/*
 * No Bicep compiler can be installed here, so these tests read the templates and check the invariants the
 * deployment promises: every resource, keyless access, and each role assignment's role and scope. The
 * GitHub workflow in .github/workflows/infra.yml compiles them (`az bicep build`) and previews a deployment.
 */
const root = resolve(__dirname, '../..');
const main = readBicep(root, 'infra/main.bicep');
const modules = Object.fromEntries(
  readdirSync(join(root, 'infra/modules')).map((f) => [f, readBicep(root, `infra/modules/${f}`)]),
) as Record<string, BicepFile>;
const all = [main, ...Object.values(modules)];
const resources = all.flatMap((f) =>
  f.resources.filter((r) => !r.existing).map((r) => ({ ...r, file: f.path })),
);
const ofType = (type: string) => resources.filter((r) => r.type === type);

const ROLE = {
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b',
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88',
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3',
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6',
  keyVaultSecretsOfficer: 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7',
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb',
  // Durable Task Data Contributor and Reader (learn.microsoft.com, built-in roles: integration).
  durableTaskDataContributor: '0ad04412-c4d5-4796-b79c-f76d14c8d402',
  durableTaskDataReader: 'd6a5505f-6ebb-45a4-896e-ac8274cfc0ac',
};

/** The app settings main.bicep sets itself: the object it unions over the operator's passed-through ones. */
function bicepAppSettings(): string[] {
  const body = main.modules.find((m) => m.symbol === 'app')?.body ?? '';
  const at = body.indexOf('json(base64ToString(appSettingsBase64)), {');
  return at < 0 ? [] : objectKeys(`fixed: {${block(body, body.indexOf('{', at))}}`, 'fixed');
}

describe('azd project', () => {
  it('azure.yaml: one function service in TypeScript, infra from infra/main.bicep', () => {
    const azure = parseYaml(readFileSync(join(root, 'azure.yaml'), 'utf8'));
    expect(Object.keys(azure.services)).toEqual(['app']);
    expect(azure.services.app).toMatchObject({ project: '.', language: 'ts', host: 'function' });
    expect(azure.infra).toMatchObject({ provider: 'bicep', path: 'infra', module: 'main' });
    // azd finds the app by this tag.
    expect(modules['function-app.bicep'].text + main.text).toContain("'azd-service-name': 'app'");
  });

  it('main.parameters.json gives every parameter without a default, and only known ones', () => {
    const file = JSON.parse(readFileSync(join(root, 'infra/main.parameters.json'), 'utf8'));
    const given = Object.keys(file.parameters);
    const declared = main.params.map((p) => p.name);
    expect(given.filter((g) => !declared.includes(g))).toEqual([]);
    expect(main.params.filter((p) => !p.defaulted && !given.includes(p.name))).toEqual([]);
    expect(file.parameters.environmentName.value).toBe('${AZURE_ENV_NAME}');
    expect(file.parameters.principalId.value).toBe('${AZURE_PRINCIPAL_ID}');
  });

  it('main.bicep is subscription-scoped and every module it uses exists', () => {
    expect(main.text).toMatch(/^targetScope = 'subscription'$/m);
    expect(main.modules.map((m) => m.path).sort()).toEqual(
      Object.keys(modules)
        .map((f) => `modules/${f}`)
        .sort(),
    );
    for (const m of main.modules) expect(existsSync(join(root, 'infra', m.path))).toBe(true);
  });
});

describe('provisioning: the hooks azd runs, and what they feed', () => {
  const azure = () => parseYaml(readFileSync(join(root, 'azure.yaml'), 'utf8'));
  const parameters = () =>
    JSON.parse(readFileSync(join(root, 'infra/main.parameters.json'), 'utf8')).parameters;

  it('preprovision checks the settings and derives the alert interval; postdown makes the next names new', () => {
    const hooks = azure().hooks;
    expect(hooks.preprovision).toMatchObject({ run: 'npm run --silent provision' });
    expect(hooks.postdown).toMatchObject({ run: 'npm run --silent provision:after-down' });
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.scripts.provision).toContain('node dist/tools/provision.js');
    expect(pkg.scripts['provision:after-down']).toMatch(/node dist\/tools\/provision\.js --after-down$/);
  });

  it('no hook passes arguments through `npm run … --` (npm’s PowerShell shim drops the `--`): a script per hook', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const { hooks, services } = azure();
    const runs = [...Object.values(hooks), ...Object.values(services.app.hooks)].flatMap((h) => {
      const hook = h as { run: string; windows?: { run: string } };
      return [hook.run, hook.windows?.run].filter((r): r is string => Boolean(r));
    });
    expect(runs.length).toBeGreaterThanOrEqual(8);
    for (const run of runs) {
      expect(run).not.toMatch(/\s--(\s|$)/);
      // Each names a script package.json has.
      const script = /^npm run (?:--silent )?([\w:-]+)$/.exec(run)?.[1];
      expect([run, script && pkg.scripts[script] ? 'a script' : 'no script']).toEqual([run, 'a script']);
    }
    for (const workflow of ['azure-dev.yml', 'infra.yml'])
      expect(readFileSync(join(root, '.github/workflows', workflow), 'utf8')).not.toMatch(
        /npm run[^\n]* -- /,
      );
  });

  it('the alert windows the hook computes reach the rules, and Bicep takes only windows the API accepts', () => {
    const p = parameters();
    expect(p.syncIntervalMinutes.value).toBe('${SYNC_INTERVAL_MINUTES=15}');
    expect(p.syncFailedWindowMinutes.value).toBe('${SYNC_FAILED_WINDOW_MINUTES=60}');
    expect(p.noSuccessfulSyncWindowMinutes.value).toBe('${NO_SUCCESSFUL_SYNC_WINDOW_MINUTES=30}');
    expect(p.noSuccessfulSyncAlert.value).toBe('${NO_SUCCESSFUL_SYNC_ALERT=true}');
    const m = main.modules.find((x) => x.path === 'modules/alerts.bicep');
    for (const name of ['syncFailedWindowMinutes', 'noSuccessfulSyncWindowMinutes', 'noSuccessfulSyncAlert'])
      expect(m?.body).toContain(`${name}: ${name}`);
    const alerts = modules['alerts.bicep'].text;
    // No window is computed in Bicep any more: nothing here could test it (it was max(60, …) and max(30, …)).
    expect(alerts).not.toMatch(/windowMinutes: max\(/);
    expect(alerts).toContain('windowMinutes: syncFailedWindowMinutes');
    expect(alerts).toContain('windowMinutes: noSuccessfulSyncWindowMinutes');
    expect(alerts).toContain('enabled: noSuccessfulSyncAlert');
    // Every fixed window is an accepted one, and both files allow exactly the list the hook rounds to.
    for (const [, w] of alerts.matchAll(/windowMinutes: (\d+)/g))
      expect(ACCEPTED_WINDOW_MINUTES).toContain(Number(w));
    const allowed = `@allowed([${ACCEPTED_WINDOW_MINUTES.join(', ')}])`;
    expect(alerts.split(allowed)).toHaveLength(3);
    expect(main.text.split(allowed)).toHaveLength(3);
    expect(alerts).toContain(`param failedSyncsInARow int = ${FAILED_SYNCS_IN_A_ROW}`);
  });

  it('every resource name carries the suffix the hook makes; the suffix lives on as an output and the group’s tag', () => {
    expect(parameters().resourceSuffix.value).toBe('${AZURE_RESOURCE_SUFFIX=}');
    expect(main.text).toContain('uniqueString(subscription().id, environmentName, location, resourceSuffix)');
    expect(main.outputs.find((o) => o.name === 'AZURE_RESOURCE_SUFFIX')?.value).toBe('resourceSuffix');
    expect(main.text).toContain(
      `tags: union(tags, { '${SUFFIX_TAG}': resourceSuffix, '${BACKEND_TAG}': durableBackend })`,
    );
    expect(main.text).toContain(`name: '${resourceGroupName('${environmentName}')}'`);
  });

  it('the Entra sign-in: settings are written before authsettingsV2, and its redirect URI is an output', () => {
    const app = modules['function-app.bicep'];
    const auth = app.resources.find((r) => r.symbol === 'easyAuth');
    expect(auth?.body).toContain('dependsOn: [app::settings]');
    expect(main.outputs.find((o) => o.name === 'MANAGE_ENTRA_REDIRECT_URI')?.value).toContain(
      '/.auth/login/aad/callback',
    );
  });
});

describe('resources', () => {
  it('a user-assigned identity, and the app runs as it', () => {
    expect(ofType('Microsoft.ManagedIdentity/userAssignedIdentities')).toHaveLength(1);
    const [site] = ofType('Microsoft.Web/sites');
    expect(prop(site.body, 'type')).toBe("'UserAssigned'");
    expect(site.body).toContain("authentication: { type: 'UserAssignedIdentity'");
  });

  it('storage: shared keys off, no public blobs, TLS 1.2; containers for exports, sync state and changes, and the package', () => {
    const [storage] = ofType('Microsoft.Storage/storageAccounts');
    expect(prop(storage.body, 'allowSharedKeyAccess')).toBe('false');
    expect(prop(storage.body, 'allowBlobPublicAccess')).toBe('false');
    expect(prop(storage.body, 'defaultToOAuthAuthentication')).toBe('true');
    expect(prop(storage.body, 'minimumTlsVersion')).toBe("'TLS1_2'");
    const containers = ofType('Microsoft.Storage/storageAccounts/blobServices/containers');
    expect(containers.map((c) => prop(c.body, 'name'))).toEqual(
      expect.arrayContaining(["'exports'", "'sync-state'", "'sync-changes'", 'deploymentContainerName']),
    );
    for (const c of containers) expect(prop(c.body, 'publicAccess')).toBe("'None'");
  });

  it('Flex Consumption plan and a Linux Node.js 22 function app, https only', () => {
    const [plan] = ofType('Microsoft.Web/serverfarms');
    expect(plan.body).toContain("sku: { name: 'FC1', tier: 'FlexConsumption' }");
    expect(prop(plan.body, 'reserved')).toBe('true');
    const [site] = ofType('Microsoft.Web/sites');
    expect(prop(site.body, 'kind')).toBe("'functionapp,linux'");
    expect(site.body).toContain("runtime: { name: 'node', version: nodeVersion }");
    const nodeVersion = main.params.find((p) => p.name === 'nodeVersion');
    expect(nodeVersion?.decorators).toContain("@allowed(['22'])");
    // The one version package.json supports.
    expect(JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')).engines.node).toBe('>=22');
    expect(prop(site.body, 'httpsOnly')).toBe('true');
  });

  it('Key Vault in RBAC mode with soft delete and purge protection', () => {
    const vaults = ofType('Microsoft.KeyVault/vaults');
    expect(vaults.length).toBeGreaterThanOrEqual(1);
    const file = modules['key-vault.bicep'];
    for (const v of vaults) expect(prop(v.body, 'properties')).toBe('properties');
    const shared = block(file.text, file.text.indexOf('{', file.text.indexOf('var properties')));
    expect(prop(shared, 'enableRbacAuthorization')).toBe('true');
    expect(prop(shared, 'enableSoftDelete')).toBe('true');
    expect(prop(shared, 'enablePurgeProtection')).toBe('true');
  });

  it('Log Analytics and Application Insights with local auth off', () => {
    const [logs] = ofType('Microsoft.OperationalInsights/workspaces');
    expect(logs.body).toContain('features: { disableLocalAuth: true }');
    const [ai] = ofType('Microsoft.Insights/components');
    expect(prop(ai.body, 'DisableLocalAuth')).toBe('true');
    expect(prop(ai.body, 'WorkspaceResourceId')).toBe('logs.id');
  });
});

describe('keyless', () => {
  const text = all.map((f) => f.text).join('\n');

  it('no keys anywhere: no listKeys, no account keys, no connection string for storage', () => {
    expect(text).not.toMatch(/listKeys|listKeyValue|AccountKey|SharedAccessSignature|listAccountSas/i);
    expect(text).not.toMatch(/\bAzureWebJobsStorage\s*:/);
    expect(text).not.toMatch(/primaryKey|instrumentationKey/i);
  });

  it('optional Easy Auth (Entra ID) in front of /api/manage: off unless a client id is given; machine routes stay key-only', () => {
    const [auth] = ofType('Microsoft.Web/sites/config');
    expect(auth.body).toBeDefined();
    const site = modules['function-app.bicep'].text;
    expect(site).toContain(
      "resource easyAuth 'Microsoft.Web/sites/config@2024-04-01' = if (!empty(manageEntraClientId))",
    );
    expect(prop(auth.body, 'requireAuthentication')).toBe('true');
    expect(prop(auth.body, 'unauthenticatedClientAction')).toBe("'RedirectToLoginPage'");
    const excluded = prop(auth.body, 'excludedPaths') ?? '';
    for (const path of [
      '/api/health',
      '/api/exports',
      '/api/exports/*',
      '/api/imports',
      '/api/imports/*',
      '/runtime/webhooks/*',
    ])
      expect(excluded).toContain(`'${path}'`);
    expect(excluded).not.toContain('/api/manage');
    expect(main.text).toMatch(/param manageEntraClientId string = ''/);
  });

  it('import batches expire by a lifecycle rule after IMPORTS_RETENTION_DAYS, the app told the same days', () => {
    const storage = modules['storage.bicep'].text;
    const rule = block(storage, storage.indexOf('{', storage.indexOf("name: 'expire-imports'") - 20));
    expect(rule).toContain("prefixMatch: ['imports/']");
    expect(rule).toContain('daysAfterModificationGreaterThan: importsRetentionDays');
    expect(main.text).toMatch(/param importsRetentionDays int = 30/);
    expect(main.text).toMatch(/importsRetentionDays: importsRetentionDays/);
    const site = main.text;
    expect(site).toContain('IMPORTS_RETENTION_DAYS: string(importsRetentionDays)');
    expect(site).toContain('IMPORT_OPERATIONS_FILE: importOperationsFile');
    expect(site).toContain('IMPORTS_REQUEST_SECRET_NAME: importsRequestSecretName');
    // The app's own default is the same, and refuses a retention no longer than its waits.
    expect(partOf(loadConfig({}), IMPORT_SETTINGS).retentionDays).toBe(30);
    expect(() => loadConfig({ IMPORTS_RETENTION_DAYS: '2', IMPORTS_ADMIN_WAIT: 'P2D' })).toThrow(
      /IMPORTS_RETENTION_DAYS: must be at least a day longer than IMPORTS_ADMIN_WAIT/,
    );
  });

  it('the host reaches storage with the managed identity (AzureWebJobsStorage__*) and telemetry with Entra ID', () => {
    const site = modules['function-app.bicep'].text;
    const settings = block(site, site.indexOf('{', site.indexOf('union(appSettings')));
    expect(prop(settings, 'AzureWebJobsStorage__credential')).toBe("'managedidentity'");
    expect(prop(settings, 'AzureWebJobsStorage__clientId')).toBe('identityClientId');
    for (const s of ['blob', 'queue', 'table'])
      expect(prop(settings, `AzureWebJobsStorage__${s}ServiceUri`)).toBe(
        `storage.properties.primaryEndpoints.${s}`,
      );
    expect(prop(settings, 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING')).toBe(
      "'ClientId=${identityClientId};Authorization=AAD'",
    );
  });

  it('the client secret is never a parameter or an output; nothing is @secure because nothing secret goes in', () => {
    expect(text).not.toContain('@secure');
    for (const f of all) {
      for (const p of f.params) expect(p.name).not.toMatch(/secret(?!Name)|password|token|key$/i);
      for (const o of f.outputs)
        expect(`${o.name} ${o.value}`).not.toMatch(/getSecret|secret(?!Name|_NAME)|ConnectionString/i);
    }
    expect(ofType('Microsoft.KeyVault/vaults/secrets')).toEqual([]);
  });
});

describe('role assignments: least privilege, narrowest scope', () => {
  const access = modules['access.bicep'];
  const existing = Object.fromEntries(access.resources.filter((r) => r.existing).map((r) => [r.symbol, r]));
  const roleVar = block(access.text, access.text.indexOf('{', access.text.indexOf('var roles')));
  const roleId = (key: string) => prop(roleVar, key)?.replace(/'/g, '');
  const assignments = access.resources
    .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
    .map((r) => {
      const scope = prop(r.body, 'scope') as string;
      const key = /roles\.(\w+)\)/.exec(prop(r.body, 'roleDefinitionId') ?? '')?.[1] as string;
      const vault =
        existing[scope]?.type === 'Microsoft.KeyVault/vaults' ? ` ${prop(existing[scope].body, 'name')}` : '';
      return {
        who: prop(r.body, 'principalId'),
        role: roleId(key),
        scope: `${existing[scope]?.type}${vault}`,
        conditional: Boolean(r.condition),
      };
    });

  it('role ids are the built-in roles they are named after', () => {
    for (const [key, id] of Object.entries(ROLE)) expect(roleId(key)).toBe(id);
  });

  it('exactly these assignments, and none anywhere else', () => {
    const app = 'appPrincipalId';
    expect(assignments).toEqual(
      expect.arrayContaining([
        {
          who: app,
          role: ROLE.storageBlobDataOwner,
          scope: 'Microsoft.Storage/storageAccounts',
          conditional: false,
        },
        {
          who: app,
          role: ROLE.storageQueueDataContributor,
          scope: 'Microsoft.Storage/storageAccounts',
          conditional: false,
        },
        {
          who: app,
          role: ROLE.storageTableDataContributor,
          scope: 'Microsoft.Storage/storageAccounts',
          conditional: false,
        },
        // Read the client secret; write only in the sessions vault.
        {
          who: app,
          role: ROLE.keyVaultSecretsUser,
          scope: 'Microsoft.KeyVault/vaults credentialsVaultName',
          conditional: false,
        },
        {
          who: app,
          role: ROLE.keyVaultSecretsOfficer,
          scope: 'Microsoft.KeyVault/vaults sessionsVaultName',
          conditional: false,
        },
        {
          who: app,
          role: ROLE.monitoringMetricsPublisher,
          scope: 'Microsoft.Insights/components',
          conditional: false,
        },
        // Only with durableBackend = scheduler: the scheduler's data, nothing else.
        {
          who: app,
          role: ROLE.durableTaskDataContributor,
          scope: 'Microsoft.DurableTask/schedulers',
          conditional: true,
        },
        // The deploying person: set the client secret, and with the scheduler read its dashboard — nothing more.
        {
          who: 'deployerPrincipalId',
          role: ROLE.keyVaultSecretsOfficer,
          scope: 'Microsoft.KeyVault/vaults credentialsVaultName',
          conditional: true,
        },
        {
          who: 'deployerPrincipalId',
          role: ROLE.durableTaskDataReader,
          scope: 'Microsoft.DurableTask/schedulers',
          conditional: true,
        },
      ]),
    );
    expect(assignments).toHaveLength(9);
    // The dashboard's role only where there is a scheduler and a person to give it to.
    const reader = access.resources.find((r) => r.symbol === 'deployerReadsDurableTasks');
    expect(reader?.condition).toBe('!empty(durableSchedulerName) && !empty(deployerPrincipalId)');
    for (const f of all.filter((f) => f !== access))
      expect(f.resources.filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')).toEqual([]);
    // No broad roles (Owner, Contributor, User Access Administrator) and no resource-group or subscription scope.
    expect(access.text).not.toMatch(
      /8e3af657-a8ff-443c-a75c-2fe8c4bcb635|b24988ac-6180-42a0-ab88-20f7382dd24c|18d7d88d-d35e-4fb5-a5c3-7773c20a72d9/,
    );
    expect(access.text).not.toMatch(/scope:\s*(resourceGroup|subscription)\(/);
  });

  it('the app gets the vault URLs it needs: credentials to read, sessions to write', () => {
    const settings = bicepAppSettings();
    expect(settings).toEqual(expect.arrayContaining(['KEY_VAULT_URL', 'KEY_VAULT_SESSIONS_URL']));
    expect(main.text).toContain('KEY_VAULT_URL: vaults.outputs.credentialsVaultUri');
    expect(main.text).toContain('KEY_VAULT_SESSIONS_URL: vaults.outputs.sessionsVaultUri');
  });
});

describe('app settings', () => {
  const settings = bicepAppSettings();

  it('has every setting of docs/configuration.md, under the names the app reads', () => {
    expect(settings).toEqual(
      expect.arrayContaining([
        'TENANT_NAME',
        'TENANT_BASE_URL',
        'TENANT_AUTH_URL',
        'TENANT_CLIENT_ID',
        'TENANT_CLIENT_SECRET_NAME',
        'KEY_VAULT_URL',
        'SYNC_SCHEDULE',
        'SYNC_STREAMS',
        'SYNC_SINKS',
        'AZURE_CLIENT_ID',
      ]),
    );
    // The host's own (durable extension, Node) beside the app's.
    const known = [
      ...Object.keys(APP_SETTINGS.schema.shape),
      'DURABLE_TASK_HUB',
      'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
      'NODE_OPTIONS',
    ];
    expect(settings.filter((s) => !known.includes(s))).toEqual([]);
    // host.json's task hub name comes from a setting that exists.
    const hub = /%(\w+)%/.exec(readFileSync(join(root, 'host.json'), 'utf8'))?.[1];
    expect(settings).toContain(hub);
  });

  it('NODE_OPTIONS gives the worker the young generation of shared/node-flags.ts, in a form Node starts with', () => {
    const body = main.modules.find((m) => m.symbol === 'app')?.body ?? '';
    const value = /NODE_OPTIONS: '([^']*)'/.exec(body)?.[1];
    expect(value).toBe(APP_NODE_OPTIONS);
    // Node refuses some V8 flags in NODE_OPTIONS, and a worker that cannot start runs nothing: this one it takes.
    const started = spawnSync(process.execPath, ['-e', 'process.stdout.write("started")'], {
      env: { ...process.env, NODE_OPTIONS: value },
      encoding: 'utf8',
    });
    expect(started.stderr).toBe('');
    expect(started.stdout).toBe('started');
  });

  it('as deployed, they pass the app’s own start-up validation', () => {
    const env: Record<string, string> = {
      TENANT_NAME: 'contoso',
      TENANT_BASE_URL: 'https://contoso.example.com',
      TENANT_AUTH_URL: 'https://login.example.com',
      TENANT_CLIENT_ID: 'm2m',
      TENANT_CLIENT_SECRET_NAME: 'tenant-client-secret',
      KEY_VAULT_URL: 'https://kv-abc.vault.azure.net/',
      KEY_VAULT_SESSIONS_URL: 'https://kvs-abc.vault.azure.net/',
      AZURE_CLIENT_ID: '00000000-0000-0000-0000-000000000000',
      SYNC_SCHEDULE: '0 */15 * * * *',
      SYNC_STREAMS: '',
      SYNC_SINKS: 'blob',
      DOWNSTREAM_WEBHOOK_URL: '',
      EXPORTS_MAX_CONCURRENT: '2',
      IMPORT_OPERATIONS_FILE: '',
      IMPORTS_REQUEST_SECRET_NAME: '',
      IMPORTS_RETENTION_DAYS: '30',
      HOSTED_IN_AZURE: 'true',
      SYNC_FORMAT: 'ndjson',
      POSTGRES_HOST: '',
      POSTGRES_DATABASE: 'postgres',
      POSTGRES_USER: '',
      AzureWebJobsStorage__blobServiceUri: 'https://stabc.blob.core.windows.net/',
      AzureWebJobsStorage__queueServiceUri: 'https://stabc.queue.core.windows.net/',
      AzureWebJobsStorage__tableServiceUri: 'https://stabc.table.core.windows.net/',
    };
    expect(
      Object.keys(env)
        .filter((k) => !k.startsWith('AzureWebJobsStorage__'))
        .sort(),
    ).toEqual(
      settings
        .filter(
          (s) =>
            !['DURABLE_TASK_HUB', 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING', 'NODE_OPTIONS'].includes(s),
        )
        .sort(),
    );
    const config = loadConfig(env);
    expect(config.tenant?.name).toBe('contoso');
    expect(config).toMatchObject({ hosted: true, hosting: { azure: true, because: 'HOSTED_IN_AZURE=true' } });
    // Empty as deployed by default: imports are off until an operator names the file.
    expect(partOf(config, IMPORT_SETTINGS)).toMatchObject({
      operationsFile: undefined,
      requestSecretName: undefined,
      retentionDays: 30,
    });
    expect(config.storageServiceUris?.table).toBe('https://stabc.table.core.windows.net/');
    expect(config.keyVaultSessionsUrl).toBe('https://kvs-abc.vault.azure.net/');
    // With a PostgreSQL host, Bicep sets the identity's name as the role: valid too.
    expect(
      loadConfig({
        ...env,
        SYNC_SINKS: 'postgres',
        POSTGRES_HOST: 'pg-abc.postgres.database.azure.com',
        POSTGRES_USER: 'id-abc',
      }).sinks.postgres,
    ).toMatchObject({ host: 'pg-abc.postgres.database.azure.com', user: 'id-abc', database: 'postgres' });
    // The main.bicep defaults are valid values too.
    const schedule = main.params.find((p) => p.name === 'syncSchedule');
    expect(schedule?.defaulted).toBe(true);
    expect(() =>
      loadConfig({ ...env, SYNC_SCHEDULE: /syncSchedule string = '([^']+)'/.exec(main.text)?.[1] }),
    ).not.toThrow();
  });
});

describe('alerts and workbook', () => {
  const alerts = modules['alerts.bicep'];
  const rules = [
    ...alerts.text.matchAll(
      /name: '([\w-]+)'\n\s+description: '([^']+)'\n\s+severity: (\d)[\s\S]*?query: '([^\n]+)'\n/g,
    ),
  ].map(([, name, description, severity, query]) => ({
    name,
    description,
    severity: Number(severity),
    query,
  }));

  it('main.bicep wires the module to Application Insights; the e-mail is optional', () => {
    const m = main.modules.find((x) => x.path === 'modules/alerts.bicep');
    expect(m?.body).toContain('appInsightsName: monitoring.outputs.appInsightsName');
    expect(main.params.find((p) => p.name === 'alertEmail')?.defaulted).toBe(true);
    // No e-mail means an action group without receivers, not a failed deployment.
    expect(alerts.text).toContain('emailReceivers: empty(alertEmail) ? [] :');
  });

  it('one scheduled-query rule per failure an operator must hear about', () => {
    expect(rules.map((r) => r.name).sort()).toEqual([
      'credential-rejected',
      'delegated-session-login-required',
      'exports-failing',
      'import-waiting-for-admin',
      'imports-failing',
      'no-successful-sync',
      'sync-failed-in-a-row',
    ]);
    // One resource looping over the rules (the Bicep reader here does not parse loops).
    expect(alerts.text).toMatch(
      /resource alerts 'Microsoft\.Insights\/scheduledQueryRules@[\d-]+(-preview)?' = \[for rule in rules: \{/,
    );
    expect(ofType('Microsoft.Insights/actionGroups').length).toBe(1);
    expect(ofType('Microsoft.Insights/workbooks').length).toBe(1);
  });

  it("each rule's query reads the app's own log records: known messages, and only fields those records carry", () => {
    const known = ALERT_RECORDS as Record<string, readonly string[]>;
    for (const rule of rules) {
      expect([rule.name, /^(union \()?traces \| where message (==|in) /.test(rule.query)]).toEqual([
        rule.name,
        true,
      ]);
      const messages = [...rule.query.matchAll(/"([^"]+)"/g)]
        .map((m) => m[1])
        .filter((m) => /^[A-Za-z0-9 ]+$/.test(m) && m.includes(' '));
      expect([rule.name, messages.length > 0]).toEqual([rule.name, true]);
      for (const m of messages) expect([rule.name, m, m in known]).toEqual([rule.name, m, true]);
      const carried = new Set(messages.flatMap((m) => known[m] ?? []));
      const used = [...rule.query.matchAll(/\bcustomDimensions\.(\w+)/g)].map((m) => m[1]);
      for (const f of used) expect([rule.name, f, carried.has(f)]).toEqual([rule.name, f, true]);
    }
  });

  it('nothing needs a key: no instrumentation key, connection string or listKeys', () => {
    expect(alerts.text).not.toMatch(/InstrumentationKey|ConnectionString|listKeys|apiKey/i);
  });
});

describe('deploy path', () => {
  const validate = new Ajv2019({ strict: false, allErrors: true }).compile(
    JSON.parse(readFileSync(join(root, 'test/fixtures/azd/azure.yaml.schema.json'), 'utf8')),
  );
  const azure = () => parseYaml(readFileSync(join(root, 'azure.yaml'), 'utf8'));

  it("azure.yaml is valid against azd's schema, and the validator refuses what azd would", () => {
    expect([validate(azure()), validate.errors]).toEqual([true, null]);
    const broken = azure();
    broken.services.app.remoteBuild = 'no';
    broken.services.app.hooks.prepackage = { shell: 'sh' }; // a shell without `run`
    expect(validate(broken)).toBe(false);
    expect(validate.errors?.map((e) => e.instancePath)).toEqual(
      expect.arrayContaining(['/services/app/remoteBuild', '/services/app/hooks/prepackage']),
    );
  });

  it('azd deploys the staged package: dist is the folder `npm run package` fills, uploaded as it is', () => {
    const app = azure().services.app;
    expect(app).toMatchObject({ dist: '.deploy', remoteBuild: false });
    expect(app.hooks.prepackage.run).toBe('npm run package');
    expect(app.hooks.prepackage.windows.run).toBe('npm run package');
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.scripts.package).toMatch(/dist\/tools\/package\.js$/);
    expect(readFileSync(join(root, 'tools/package.ts'), 'utf8')).toContain("join(root, '.deploy')");
    expect(readFileSync(join(root, '.gitignore'), 'utf8')).toMatch(/^\.deploy\/$/m);
  });

  it('the durable backend as a choice: the storage account (Flex’s advice applied) or the Durable Task Scheduler', () => {
    expect(main.text).toMatch(
      /@allowed\(\['storage', 'scheduler'\]\)\s*param durableBackend string = 'storage'/,
    );
    const parameters = JSON.parse(readFileSync(join(root, 'infra/main.parameters.json'), 'utf8')).parameters;
    expect(parameters.durableBackend.value).toBe('${DURABLE_BACKEND=storage}');
    // The scheduler, its task hub (the hubName host.json reads), only with `scheduler`.
    const dts = main.modules.find((m) => m.path === 'modules/durable-scheduler.bicep');
    expect(dts?.condition).toBe("durableBackend == 'scheduler'");
    const module = modules['durable-scheduler.bicep'];
    expect(module.resources.map((r) => r.type)).toEqual([
      'Microsoft.DurableTask/schedulers',
      'Microsoft.DurableTask/schedulers/taskHubs',
    ]);
    // An empty list refuses everyone; with network isolation only the app's egress address is let in.
    expect(prop(module.resources[0].body, 'ipAllowlist')).toBe(
      "empty(allowedIpAddress) ? ['0.0.0.0/0'] : ['${allowedIpAddress}/32']",
    );
    expect(dts?.body).toContain("taskHubName: 'TenantIntegrations'");
    expect(main.text).toContain("DURABLE_TASK_HUB: 'TenantIntegrations'");
    // The app reaches it with its identity: the connection string names the endpoint and the client id, no key.
    const app = main.modules.find((m) => m.symbol === 'app')?.body ?? '';
    expect(app).toMatch(
      /DURABLE_TASK_SCHEDULER_CONNECTION_STRING: durableBackend == 'scheduler'\s*\? 'Endpoint=\$\{durableScheduler\.outputs\.endpoint\};Authentication=ManagedIdentity;ClientID=\$\{identity\.outputs\.clientId\}'\s*: ''/,
    );
    // Flex's advice for the storage backend: one instance always ready for the durable functions (none with the
    // scheduler), and the queues polled at most every 10 seconds.
    expect(app).toContain(
      "durableAlwaysReadyInstances: durableBackend == 'storage' ? durableAlwaysReadyInstances : 0",
    );
    expect(modules['function-app.bicep'].text).toContain(
      "[{ name: 'durable', instanceCount: durableAlwaysReadyInstances }]",
    );
    const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8'));
    expect(host.extensions.durableTask.storageProvider).toEqual({
      type: 'AzureStorage',
      maxQueuePollingInterval: '00:00:10',
    });
    // host.json as staged for the scheduler (tools/package.ts): its provider, the same task hub. The type is the name
    // the Durable extension registers the scheduler's provider under, `azureManaged` (Azure-Samples/
    // Durable-Task-Scheduler, samples/durable-functions/typescript/HelloCities/host.json; the extension's
    // DurableTaskTriggersScaleProvider) — with `durabletask-scheduler` the host does not start.
    expect(hostJsonFor(host, 'scheduler')).toMatchObject({
      extensions: {
        durableTask: {
          hubName: '%DURABLE_TASK_HUB%',
          storageProvider: {
            type: 'azureManaged',
            connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
          },
        },
      },
    });
    expect(hostJsonFor(host, 'storage')).toBe(host);
    expect(durableBackendOf(undefined)).toBe('storage');
    expect(() => durableBackendOf('netherite')).toThrow(
      /DURABLE_BACKEND: "netherite" is not one of storage, scheduler/,
    );
  });

  it('host.json: version 2.0, the v4 extension bundle, durable on Azure Storage with the task hub from a setting', () => {
    // Checked against the host's documented settings (learn.microsoft.com, host.json reference for 2.x).
    const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8'));
    expect(host.version).toBe('2.0');
    expect(host.extensionBundle).toEqual({
      id: 'Microsoft.Azure.Functions.ExtensionBundle',
      version: '[4.*, 5.0.0)',
    });
    expect(host.extensions.durableTask.storageProvider.type).toBe('AzureStorage');
    expect(host.extensions.durableTask.hubName).toMatch(/^%[A-Z_]+%$/);
    // Flex Consumption's default (30 minutes), well inside its 60-minute scale-in drain: an activity is a slice of at
    // most ACTIVITY_SLICE_SECONDS (25 minutes at most, 4 by default), so none is cut off by the timeout or a scale-in.
    expect(host.functionTimeout).toBe('00:30:00');
    const [h, m, s] = host.functionTimeout.split(':').map(Number);
    const timeoutSeconds = h * 3600 + m * 60 + s;
    expect(timeoutSeconds).toBeLessThanOrEqual(60 * 60);
    const sliceMax = 1500;
    expect(loadConfig({ ACTIVITY_SLICE_SECONDS: String(sliceMax) }).activitySliceSeconds).toBe(sliceMax);
    expect(() => loadConfig({ ACTIVITY_SLICE_SECONDS: String(sliceMax + 1) })).toThrow(
      /ACTIVITY_SLICE_SECONDS/,
    );
    expect(sliceMax + 5 * 60).toBeLessThanOrEqual(timeoutSeconds);
    const known = ['version', 'telemetryMode', 'logging', 'extensionBundle', 'extensions', 'functionTimeout'];
    expect(Object.keys(host).filter((k) => !known.includes(k))).toEqual([]);
    // The worker's traces and logs go out as OpenTelemetry (shared/telemetry). In that mode the host reads none of
    // `logging.applicationInsights` (its sampling settings belong to the classic mode: Azure/azure-functions-host
    // #10770, #11366), so none is set where it would only look as if it did something.
    expect(host.telemetryMode).toBe('OpenTelemetry');
    expect(host.logging?.applicationInsights).toBeUndefined();
  });
});

describe('deployment package (.funcignore)', () => {
  // azd applies the service folder's .funcignore to what it zips — the staged .deploy/ — and, with no such file,
  // leaves node_modules out of a Node.js app (learn.microsoft.com, azd: "Configure service packaging file exclusions").
  const rules = ignore().add(readFileSync(join(root, '.funcignore'), 'utf8'));

  it('is there, and excludes nothing the staged package holds: the bundle, host.json, dependencies, config/', () => {
    for (const p of [
      'dist/main.js',
      'host.json',
      'package.json',
      'package-lock.json',
      'node_modules/zod/index.js',
      'node_modules/@azure/storage-blob/package.json',
      'config/import-operations.json',
      '.funcignore',
    ])
      expect([p, rules.ignores(p)]).toEqual([p, false]);
    const azure = parseYaml(readFileSync(join(root, 'azure.yaml'), 'utf8'));
    expect(azure.services.app).toMatchObject({ project: '.', dist: '.deploy', remoteBuild: false });
  });
});

describe('CI workflows for the user repository', () => {
  const workflow = (name: string) => {
    const text = readFileSync(join(root, '.github/workflows', name), 'utf8');
    return { text, parsed: parseYaml(text) };
  };
  /** The commands a job runs, in order (each step's `run`, or `uses`). */
  const commands = (job: { steps: Array<{ run?: string; uses?: string }> }) =>
    job.steps.map((s) => s.run ?? `uses ${s.uses}`);

  /** The variables a step of these workflows reads from the job's env or its own (`$NAME`, `"$NAME"`). */
  const settingsStep = (job: {
    steps: Array<{ name?: string; run?: string; env?: Record<string, string> }>;
  }) => job.steps.find((st) => st.run?.includes('provision:import-variables'));

  it('builds the Bicep and previews the provision with the deploy workflow’s settings, installed before the hook', () => {
    const { text, parsed } = workflow('infra.yml');
    const steps = JSON.stringify(parsed.jobs);
    expect(steps).toContain('az bicep build --file infra/main.bicep');
    // Only the preview may mint a token, behind its environment, as a principal of its own (never the deployer's).
    expect(parsed.permissions).toEqual({ contents: 'read' });
    expect(parsed.jobs.build.permissions).toBeUndefined();
    expect(parsed.jobs.preview).toMatchObject({
      environment: 'preview',
      if: "vars.AZURE_PREVIEW_CLIENT_ID != ''",
      permissions: { contents: 'read', 'id-token': 'write' },
      env: { AZURE_CLIENT_ID: '${{ vars.AZURE_PREVIEW_CLIENT_ID }}' },
    });
    const preview = commands(parsed.jobs.preview);
    const install = preview.indexOf('npm ci --ignore-scripts');
    const provision = preview.findIndex((c) => c.includes('azd provision --preview'));
    // The preprovision hook runs `npm run provision` (dist/tools/provision.js): it failed without an install.
    expect(install).toBeGreaterThanOrEqual(0);
    expect(install).toBeLessThan(provision);
    // The settings (the suffix among them) come from the repository's variables, before the preview.
    const settings = settingsStep(parsed.jobs.preview);
    expect(settings?.env?.REPOSITORY_VARIABLES).toBe('${{ toJSON(vars) }}');
    expect(preview.indexOf(settings?.run as string)).toBeLessThan(provision);
    expect(preview.findIndex((c) => c.includes('azd env new'))).toBeLessThan(
      preview.indexOf(settings?.run as string),
    );
    // Federated credentials only: no secret in the workflow.
    expect(text).not.toMatch(/secrets\./);
  });

  it('deploys as azd pipeline config expects: federated login, install, every setting, provision then deploy', () => {
    const { text, parsed } = workflow('azure-dev.yml');
    expect(parsed.permissions).toMatchObject({ 'id-token': 'write' });
    const job = parsed.jobs.deploy;
    for (const v of [
      'AZURE_CLIENT_ID',
      'AZURE_TENANT_ID',
      'AZURE_SUBSCRIPTION_ID',
      'AZURE_ENV_NAME',
      'AZURE_LOCATION',
    ])
      expect(job.env[v]).toBe(`\${{ vars.${v} }}`);
    const steps = commands(job);
    const at = (needle: string) => steps.findIndex((c) => c.includes(needle));
    expect(at('npm ci')).toBeLessThan(at('azd provision --no-prompt'));
    // It can mint a token: the install runs no package's lifecycle script.
    expect(steps.filter((c) => c.startsWith('npm ci'))).toEqual(['npm ci --ignore-scripts']);
    expect(at('azd auth login')).toBeLessThan(at('azd provision --no-prompt'));
    expect(at('azd env new')).toBeLessThan(at('provision:import-variables'));
    expect(at('provision:import-variables')).toBeLessThan(at('azd provision --no-prompt'));
    const run = steps[at('azd provision --no-prompt')];
    expect(run.indexOf('azd provision --no-prompt')).toBeLessThan(run.indexOf('azd deploy --no-prompt'));
    expect(steps[at('azd auth login')]).toContain('--federated-credential-provider github');
    expect(settingsStep(job)?.env?.REPOSITORY_VARIABLES).toBe('${{ toJSON(vars) }}');
    // No list of settings in the job that could fall behind the parameters file: only the login's own variables
    // (an empty variable there would also shadow the value azd's hook sets).
    expect(Object.keys(job.env).sort()).toEqual(
      [
        'AZURE_CLIENT_ID',
        'AZURE_ENV_NAME',
        'AZURE_LOCATION',
        'AZURE_PRINCIPAL_TYPE',
        'AZURE_SUBSCRIPTION_ID',
        'AZURE_TENANT_ID',
      ].sort(),
    );
    expect(text).not.toMatch(/secrets\./);
  });

  it('every variable the parameters file and the hooks read reaches azd: imported, derived by the hook, or azd’s own', () => {
    const importable = importableVariables(root, DERIVED);
    const fromAzd = ['AZURE_ENV_NAME', 'AZURE_LOCATION', 'AZURE_PRINCIPAL_ID', 'AZURE_PRINCIPAL_TYPE'];
    const read = parameterVariables(root);
    expect(read.length).toBeGreaterThan(25);
    expect(
      read.filter((v) => !importable.includes(v) && !DERIVED.includes(v as never) && !fromAzd.includes(v)),
    ).toEqual([]);
    // What the hooks read from their environment (azure.yaml: provision, and package for DURABLE_BACKEND).
    const hookReads = [
      'tools/provision.ts',
      'tools/package.ts',
      'tools/app-settings.ts',
      'tools/durable-backend.ts',
    ]
      .flatMap((f) => [...readFileSync(join(root, f), 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)])
      .map((m) => m[1]);
    expect(hookReads).toEqual(
      expect.arrayContaining(['DURABLE_BACKEND', 'SYNC_SCHEDULE', 'AZURE_RESOURCE_SUFFIX']),
    );
    // The subscription and the workflow's variables come from azd and the workflow; the deployed backend is a Bicep
    // output azd writes back (infra/main.bicep).
    const outside = [
      'AZURE_SUBSCRIPTION_ID',
      'REPOSITORY_VARIABLES',
      'PROVISIONED_DURABLE_BACKEND',
      // Read as the deployed value that `azd env refresh` brings back (tools/app-settings.ts settingsToRestore).
      'APP_SETTINGS_BASE64',
    ];
    expect(main.outputs.map((o) => o.name)).toContain('PROVISIONED_DURABLE_BACKEND');
    expect(
      [...new Set(hookReads)].filter(
        (v) => !importable.includes(v) && !fromAzd.includes(v) && !outside.includes(v),
      ),
    ).toEqual([]);
    // A derived value is never taken from a variable: the hook computes it from the schedule on every provision.
    expect(importable.filter((v) => DERIVED.includes(v as never))).toEqual([]);
    expect(
      variablesToImport(JSON.stringify({ SYNC_INTERVAL_MINUTES: '1', TENANT_NAME: 'contoso' }), root),
    ).toEqual({
      TENANT_NAME: 'contoso',
    });
  });
});

describe('settings the operator sets through azd', () => {
  it('main.bicep sets the settings BICEP_SETTINGS names (its own and the host’s), the schema’s others pass through', () => {
    const site = modules['function-app.bicep'].text;
    const host = objectKeys(`h: {${block(site, site.indexOf('{', site.indexOf('union(appSettings')))}}`, 'h');
    const schema = Object.keys(APP_SETTINGS.schema.shape);
    expect([...bicepAppSettings(), ...host].filter((k) => schema.includes(k)).sort()).toEqual(
      [...BICEP_SETTINGS].sort(),
    );
    for (const k of [...BICEP_SETTINGS, ...NOT_IN_AZURE]) expect(schema).toContain(k);
    expect([...BICEP_SETTINGS, ...NOT_IN_AZURE, ...PASSED_THROUGH].sort()).toEqual([...schema].sort());
    // The operator's passed-through settings first, Bicep's own over them.
    expect(main.text).toContain(
      'appSettings: union(empty(appSettingsBase64) ? {} : json(base64ToString(appSettingsBase64)), {',
    );
    expect(PASSED_THROUGH).toEqual(
      expect.arrayContaining([
        'SYNC_SCHEMA_CHANGES',
        'POSTGRES_SCHEMA',
        'IMPORTS_ADMIN_WAIT',
        'DOWNSTREAM_WEBHOOK_SECRET_NAME',
      ]),
    );
  });

  it('a value of any shape survives azd’s substitution into main.parameters.json and Bicep’s base64ToString/json', () => {
    const settings = {
      SYNC_SCHEMA_CHANGES: 'propagate',
      // Quotes, braces, a backslash, a newline and non-ASCII: each would break the parameters file unescaped.
      OTEL_SERVICE_NAME: 'a "quoted" {name} with \\ and\nline – ü',
      POSTGRES_SCHEMA: 'tenant_contoso',
    };
    const value = appSettingsParameter(settings);
    expect(value).toMatch(/^[A-Za-z0-9+/]+=*$/);
    // azd (drone/envsubst): `${NAME=default}` is the value, or the default when unset or empty.
    const substitute = (text: string, env: Record<string, string>) =>
      text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^}]*))?\}/g, (_, name: string, dflt?: string) =>
        env[name] ? env[name] : (dflt ?? ''),
      );
    const file = readFileSync(join(root, 'infra/main.parameters.json'), 'utf8');
    const parsed = JSON.parse(substitute(file, { APP_SETTINGS_BASE64: value }));
    expect(
      JSON.parse(Buffer.from(parsed.parameters.appSettingsBase64.value, 'base64').toString('utf8')),
    ).toEqual(settings);
    // Nothing set: empty, and Bicep adds nothing.
    expect(
      appSettingsParameter({
        SYNC_SCHEDULE: '0 0 * * * *',
        AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      }),
    ).toBe('');
    expect(JSON.parse(substitute(file, {})).parameters.appSettingsBase64.value).toBe('');
  });

  it('never passes a setting that would put a secret or a local path in Azure’s settings', () => {
    const passed = passedThroughSettings({
      AzureWebJobsStorage: 'DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0',
      POSTGRES_URL: 'postgres://u:password@host/db',
      LOCAL_SECRETS_FILE: '.local/secrets.json',
      AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      SYNC_FULL_PASS_EVERY: 'PT12H',
    });
    expect(passed).toEqual({ SYNC_FULL_PASS_EVERY: 'PT12H' });
  });
});
