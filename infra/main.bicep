// Deploys the tenant integrations app into the user's subscription: `azd up`.
// Keyless: a user-assigned managed identity reaches storage, Key Vault and Application Insights with Entra ID;
// storage shared keys and monitoring local auth are off. The client secret is never a parameter or an output:
// it is set in Key Vault after deployment (README: Deploy).
targetScope = 'subscription'

@minLength(1)
@maxLength(40)
@description('azd environment name; used for the resource group and a unique suffix of every resource.')
param environmentName string

@minLength(1)
@description('Region for every resource. Flex Consumption is available in a subset of regions.')
@metadata({ azd: { type: 'location' } })
param location string

@description('Object id of the person running `azd up`: may set the client secret in Key Vault, nothing more. Empty to skip.')
param principalId string = ''

@description('Type of principalId: User for a person, ServicePrincipal for a pipeline identity.')
@allowed(['User', 'ServicePrincipal', 'Group'])
param principalType string = 'User'

@description('The tenant (realm) name.')
@minLength(1)
param tenantName string

@description('{base_url} of the tenant service: https, no trailing slash.')
@minLength(1)
param tenantBaseUrl string

@description('{auth_url} of the tenant identity provider: https, no trailing slash.')
@minLength(1)
param tenantAuthUrl string

@description('client_id of the read-only M2M credential (its secret goes to Key Vault after deployment).')
@minLength(1)
param tenantClientId string

@description('Name of the Key Vault secret that holds the M2M client secret.')
param clientSecretName string = 'tenant-client-secret'

@description('When the sync runs: NCRONTAB, six fields, UTC.')
param syncSchedule string = '0 */15 * * * *'

@description('Comma-separated stream names to sync; empty for all.')
param syncStreams string = ''

@description('Where the sync writes (SYNC_SINKS).')
param syncSinks string = 'blob'

@description('Where the webhook sink POSTs (https); empty when SYNC_SINKS has no webhook. Its signing secret is the Key Vault secret downstream-webhook-secret.')
param downstreamWebhookUrl string = ''

@description('Exports that may run at once, 1-50 (EXPORTS_MAX_CONCURRENT; a string because azd substitutes strings); more get 429 with Retry-After.')
param exportsMaxConcurrent string = '2'

@description('Node.js version of the function app: 22, the version the app supports (engines in package.json).')
@allowed(['22'])
param nodeVersion string = '22'

@description('Upper bound of Flex Consumption instances.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Optional: client id of a Microsoft Entra app registration; Easy Auth then signs people in before /api/manage.')
param manageEntraClientId string = ''

@description('Optional: Azure Database for PostgreSQL host for the postgres sink (SYNC_SINKS=postgres); the app signs in with its identity. Grant the role once: docs/sync.md.')
param postgresHost string = ''

@description('Database on postgresHost.')
param postgresDatabase string = 'postgres'

@description('ndjson, or parquet for Parquet change files from the blob sink.')
@allowed(['ndjson', 'parquet'])
param syncFormat string = 'ndjson'

@description('E-mail address for alerts (sync failing, credential rejected, admin login needed, exports failing, no successful sync). Empty: no receiver.')
param alertEmail string = ''

@description('Days an import\'s items and per-item results are kept after it ends (IMPORTS_RETENTION_DAYS); longer than IMPORTS_ADMIN_WAIT.')
@minValue(2)
@maxValue(365)
param importsRetentionDays int = 30

@description('The allow-list of mutations POST /api/imports may run, as a path in the deployed package (put the file in config/, e.g. config/import-operations.json). Empty: imports are off.')
param importOperationsFile string = ''

@description('When set, POST /api/imports also needs a Standard Webhooks signature made with the Key Vault secret of this name.')
param importsRequestSecretName string = ''

@description('The longest wait between two scheduled syncs, in minutes: the no-successful-sync alert waits twice as long. azd\'s preprovision hook derives it from SYNC_SCHEDULE (tools/provision.ts).')
@minValue(1)
param syncIntervalMinutes int = 15

@description('The sync-failed-in-a-row alert\'s window in minutes, one the log-alert API accepts: the preprovision hook derives it from SYNC_SCHEDULE (tools/provision.ts, `--print` shows it).')
@allowed([5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880])
param syncFailedWindowMinutes int = 60

@description('The no-successful-sync alert\'s window in minutes (twice the schedule\'s longest gap, rounded up to an accepted one), from the preprovision hook.')
@allowed([5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880])
param noSuccessfulSyncWindowMinutes int = 30

@description('Whether the no-successful-sync alert is on: off where twice the schedule\'s longest gap is longer than the two days an alert can look back (the hook decides).')
param noSuccessfulSyncAlert bool = true

@description('Where the durable orchestrations keep their state: `storage` (the app\'s storage account, the default) or `scheduler` (the Durable Task Scheduler, a resource of its own; docs/deploy.md says when to choose which). `npm run package` writes host.json for the same choice (DURABLE_BACKEND).')
@allowed(['storage', 'scheduler'])
param durableBackend string = 'storage'

@description('Instances kept ready for the durable functions (Flex Consumption\'s `durable` group), as Microsoft recommends for the storage backend on Flex: 1 (billed while idle) or 0.')
@minValue(0)
@maxValue(4)
param durableAlwaysReadyInstances int = 1

@description('Every other app setting the operator set in the azd environment (base64 of a JSON object), gathered by the preprovision hook from the app\'s configuration schema (tools/app-settings.ts): Bicep writes the whole settings list, so a setting set elsewhere would be gone at the next provision. The settings below win over it.')
param appSettingsBase64 string = ''

@description('Network isolation (VNET_ENABLED): the app joins a virtual network, storage and both Key Vaults answer only through private endpoints there (public network access off), outbound traffic leaves through a NAT gateway with one static IP. Off by default, as in the azd Flex Consumption quickstarts; docs/deploy.md says what else to do.')
param vnetEnabled bool = false

@description('The most Log Analytics ingests a day, in GB (LOG_ANALYTICS_DAILY_CAP_GB); 0 for no cap.')
@minValue(0)
@maxValue(100)
param logAnalyticsDailyCapGb int = 1

@description('Part of every resource name, made once per deployment by the preprovision hook and cleared by postdown, so `azd up` after `azd down` does not collide with the soft-deleted Key Vaults (purge protection keeps their names 90 days).')
param resourceSuffix string = ''

var tags = { 'azd-env-name': environmentName }
// The group also records the suffix, so a fresh clone or a teammate's azd finds the deployment instead of making a
// second one beside it (tools/provision.ts refuses to make a suffix where the group exists).
var token = toLower(uniqueString(subscription().id, environmentName, location, resourceSuffix))

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  // The durable backend too: a hook on a machine whose environment lacks PROVISIONED_DURABLE_BACKEND (a CI runner's
  // fresh one) reads it here before it lets a provision switch backends (tools/durable-backend.ts).
  tags: union(tags, { 'azd-resource-suffix': resourceSuffix, 'azd-durable-backend': durableBackend })
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  scope: rg
  params: { name: 'id-${token}', location: location, tags: tags }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: 'log-${token}'
    appInsightsName: 'appi-${token}'
    location: location
    tags: tags
    dailyCapGb: logAnalyticsDailyCapGb
  }
}

module alerts 'modules/alerts.bicep' = {
  name: 'alerts'
  scope: rg
  params: {
    appInsightsName: monitoring.outputs.appInsightsName
    location: location
    tags: tags
    alertEmail: alertEmail
    syncIntervalMinutes: syncIntervalMinutes
    syncFailedWindowMinutes: syncFailedWindowMinutes
    noSuccessfulSyncWindowMinutes: noSuccessfulSyncWindowMinutes
    noSuccessfulSyncAlert: noSuccessfulSyncAlert
  }
}

module durableScheduler 'modules/durable-scheduler.bicep' = if (durableBackend == 'scheduler') {
  name: 'durable-scheduler'
  scope: rg
  params: {
    name: 'dts-${token}'
    location: location
    tags: tags
    taskHubName: 'TenantIntegrations'
    allowedIpAddress: vnetEnabled ? network.outputs.egressIpAddress : ''
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: 'st${token}'
    location: location
    tags: tags
    deploymentContainerName: 'app-package-${token}'
    importsRetentionDays: importsRetentionDays
    publicAccess: !vnetEnabled
  }
}

module vaults 'modules/key-vault.bicep' = {
  name: 'key-vaults'
  scope: rg
  params: {
    credentialsVaultName: 'kv-${token}'
    sessionsVaultName: 'kvs-${token}'
    location: location
    tags: tags
    publicAccess: !vnetEnabled
  }
}

module network 'modules/network.bicep' = if (vnetEnabled) {
  name: 'network'
  scope: rg
  params: {
    name: token
    location: location
    tags: tags
    storageAccountName: storage.outputs.name
    credentialsVaultName: vaults.outputs.credentialsVaultName
    sessionsVaultName: vaults.outputs.sessionsVaultName
  }
}

module access 'modules/access.bicep' = {
  name: 'access'
  scope: rg
  params: {
    durableSchedulerName: durableBackend == 'scheduler' ? durableScheduler.outputs.name : ''
    appPrincipalId: identity.outputs.principalId
    deployerPrincipalId: principalId
    deployerPrincipalType: principalType
    storageAccountName: storage.outputs.name
    credentialsVaultName: vaults.outputs.credentialsVaultName
    sessionsVaultName: vaults.outputs.sessionsVaultName
    appInsightsName: monitoring.outputs.appInsightsName
  }
}

module app 'modules/function-app.bicep' = {
  name: 'function-app'
  scope: rg
  // The host needs its storage and monitoring roles before it starts.
  dependsOn: [access]
  params: {
    name: 'func-${token}'
    planName: 'plan-${token}'
    location: location
    tags: union(tags, { 'azd-service-name': 'app' })
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerName: storage.outputs.deploymentContainerName
    appInsightsName: monitoring.outputs.appInsightsName
    nodeVersion: nodeVersion
    maximumInstanceCount: maximumInstanceCount
    manageEntraClientId: manageEntraClientId
    durableAlwaysReadyInstances: durableBackend == 'storage' ? durableAlwaysReadyInstances : 0
    subnetId: vnetEnabled ? network.outputs.appSubnetId : ''
    appSettings: union(empty(appSettingsBase64) ? {} : json(base64ToString(appSettingsBase64)), {
      TENANT_NAME: tenantName
      TENANT_BASE_URL: tenantBaseUrl
      TENANT_AUTH_URL: tenantAuthUrl
      TENANT_CLIENT_ID: tenantClientId
      TENANT_CLIENT_SECRET_NAME: clientSecretName
      KEY_VAULT_URL: vaults.outputs.credentialsVaultUri
      KEY_VAULT_SESSIONS_URL: vaults.outputs.sessionsVaultUri
      AZURE_CLIENT_ID: identity.outputs.clientId
      SYNC_SCHEDULE: syncSchedule
      SYNC_STREAMS: syncStreams
      SYNC_SINKS: syncSinks
      DOWNSTREAM_WEBHOOK_URL: downstreamWebhookUrl
      EXPORTS_MAX_CONCURRENT: exportsMaxConcurrent
      IMPORT_OPERATIONS_FILE: importOperationsFile
      IMPORTS_REQUEST_SECRET_NAME: importsRequestSecretName
      IMPORTS_RETENTION_DAYS: string(importsRetentionDays)
      SYNC_FORMAT: syncFormat
      POSTGRES_HOST: postgresHost
      POSTGRES_DATABASE: postgresDatabase
      // The Entra role on the server is the identity's name (pgaadauth_create_principal, docs/sync.md).
      POSTGRES_USER: empty(postgresHost) ? '' : 'id-${token}'
      DURABLE_TASK_HUB: 'TenantIntegrations'
      // host.json's storageProvider reads it when the package was staged for the scheduler (tools/package.ts).
      DURABLE_TASK_SCHEDULER_CONNECTION_STRING: durableBackend == 'scheduler'
        ? 'Endpoint=${durableScheduler.outputs.endpoint};Authentication=ManagedIdentity;ClientID=${identity.outputs.clientId}'
        : ''
      // Said outright, whatever the platform's own settings are on this SKU (shared/config: hostingOf).
      HOSTED_IN_AZURE: 'true'
      // The young generation as the CLI's sync has it (shared/node-flags.ts, APP_NODE_OPTIONS); fixed when the heap
      // is made, so only Node's start can set it. The app sets the other flag itself at start-up.
      NODE_OPTIONS: '--max-semi-space-size=4'
    })
  }
}

// Outputs azd keeps in the environment: names, URLs and the operator's choices, never a secret.
output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_FUNCTION_APP_NAME string = app.outputs.name
output SERVICE_APP_URI string = app.outputs.uri
output KEY_VAULT_URL string = vaults.outputs.credentialsVaultUri
output KEY_VAULT_SESSIONS_URL string = vaults.outputs.sessionsVaultUri
// For the optional Entra sign-in in front of /api/manage (docs/security.md): the app registration needs this
// redirect URI and ID tokens enabled, because Easy Auth signs people in with the implicit flow (no client secret).
output MANAGE_ENTRA_REDIRECT_URI string = empty(manageEntraClientId) ? '' : '${app.outputs.uri}/.auth/login/aad/callback'
// With network isolation: the one address the app's traffic leaves from, for a tenant's or a receiver's allow-list.
output EGRESS_IP_ADDRESS string = vnetEnabled ? network.outputs.egressIpAddress : ''
// What the deployed app runs on: the predeploy hook refuses a package staged for the other backend, and the hooks
// refuse a switch nobody asked for (tools/durable-backend.ts).
output PROVISIONED_DURABLE_BACKEND string = durableBackend

// Every setting the operator chose, under the name the azd environment gives it (infra/main.parameters.json): azd
// writes outputs back into the environment after each provision, and `azd env refresh` does on any other machine,
// so a teammate's, a fresh clone's or CI's next provision deploys these and not the parameter file's defaults
// (test/unit/infra.test.ts compares the lists). The settings passed through APP_SETTINGS_BASE64 come back with it:
// the preprovision hook restores each that the environment does not hold (tools/app-settings.ts).
output AZURE_RESOURCE_SUFFIX string = resourceSuffix
output TENANT_NAME string = tenantName
output TENANT_BASE_URL string = tenantBaseUrl
output TENANT_AUTH_URL string = tenantAuthUrl
output TENANT_CLIENT_ID string = tenantClientId
// The secret's name in Key Vault, not its value.
#disable-next-line outputs-should-not-contain-secrets
output TENANT_CLIENT_SECRET_NAME string = clientSecretName
output SYNC_SCHEDULE string = syncSchedule
output SYNC_STREAMS string = syncStreams
output SYNC_SINKS string = syncSinks
output DOWNSTREAM_WEBHOOK_URL string = downstreamWebhookUrl
output EXPORTS_MAX_CONCURRENT string = exportsMaxConcurrent
output MANAGE_ENTRA_CLIENT_ID string = manageEntraClientId
output ALERT_EMAIL string = alertEmail
output POSTGRES_HOST string = postgresHost
output POSTGRES_DATABASE string = postgresDatabase
output SYNC_FORMAT string = syncFormat
output IMPORTS_RETENTION_DAYS int = importsRetentionDays
output IMPORT_OPERATIONS_FILE string = importOperationsFile
// The secret's name in Key Vault, not its value.
#disable-next-line outputs-should-not-contain-secrets
output IMPORTS_REQUEST_SECRET_NAME string = importsRequestSecretName
output DURABLE_BACKEND string = durableBackend
output DURABLE_ALWAYS_READY int = durableAlwaysReadyInstances
output VNET_ENABLED bool = vnetEnabled
output LOG_ANALYTICS_DAILY_CAP_GB int = logAnalyticsDailyCapGb
output APP_SETTINGS_BASE64 string = appSettingsBase64
