// Every role assignment of the deployment, each scoped as narrowly as Azure allows.
param appPrincipalId string
param deployerPrincipalId string
param deployerPrincipalType string
param storageAccountName string
param credentialsVaultName string
param sessionsVaultName string
param appInsightsName string
@description('The Durable Task Scheduler (durableBackend = scheduler), or empty: the storage account holds durable state.')
param durableSchedulerName string = ''

// Built-in role definition ids (the same in every Azure cloud).
var roles = {
  // Functions host storage (leases, timers, host keys) and durable state; includes creating user-delegation
  // keys (generateUserDelegationKey), which the export download links (user-delegation SAS) need.
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  keyVaultSecretsOfficer: 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  // What Durable Functions apps need on a Durable Task Scheduler.
  durableTaskDataContributor: '0ad04412-c4d5-4796-b79c-f76d14c8d402'
  // Reads orchestrations and their history: what the scheduler's dashboard needs, nothing more.
  durableTaskDataReader: 'd6a5505f-6ebb-45a4-896e-ac8274cfc0ac'
}

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource credentials 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: credentialsVaultName
}

resource sessions 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: sessionsVaultName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

// Storage: account scope, because the host and durable task hub create their containers, queues and
// tables at run time (names not known here).
resource appBlob 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appPrincipalId, roles.storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appPrincipalId, roles.storageQueueDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appTable 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, appPrincipalId, roles.storageTableDataContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageTableDataContributor)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Key Vault: read the client secret; read and write delegated-session secrets only.
resource appReadsCredentials 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(credentials.id, appPrincipalId, roles.keyVaultSecretsUser)
  scope: credentials
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource appWritesSessions 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(sessions.id, appPrincipalId, roles.keyVaultSecretsOfficer)
  scope: sessions
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsOfficer)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Telemetry with Entra ID (local auth is off).
resource appPublishesMetrics 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, appPrincipalId, roles.monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// Durable state in the Durable Task Scheduler, when it is the backend: the scheduler only.
resource scheduler 'Microsoft.DurableTask/schedulers@2025-11-01' existing = if (!empty(durableSchedulerName)) {
  name: durableSchedulerName
}

resource appRunsDurableTasks 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(durableSchedulerName)) {
  name: guid(scheduler.id, appPrincipalId, roles.durableTaskDataContributor)
  scope: scheduler
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.durableTaskDataContributor)
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

// The person deploying: set the client secret after `azd up` (README), nothing else.
resource deployerSetsClientSecret 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(deployerPrincipalId)) {
  name: guid(credentials.id, deployerPrincipalId, roles.keyVaultSecretsOfficer)
  scope: credentials
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsOfficer)
    principalId: deployerPrincipalId
    principalType: deployerPrincipalType
  }
}

// The person deploying, with the scheduler: its dashboard (docs/deploy.md), read-only — the orchestrations and their
// history, which hold no secret (no token, secret or device code is ever an activity's input or output).
resource deployerReadsDurableTasks 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(durableSchedulerName) && !empty(deployerPrincipalId)) {
  name: guid(scheduler.id, deployerPrincipalId, roles.durableTaskDataReader)
  scope: scheduler
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.durableTaskDataReader)
    principalId: deployerPrincipalId
    principalType: deployerPrincipalType
  }
}
