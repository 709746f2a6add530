// Flex Consumption plan and the Linux function app (Node.js), running as the user-assigned identity.
// Host storage is identity-based (AzureWebJobsStorage__*): no connection string, no key anywhere.
param name string
param planName string
param location string
param tags object
param identityId string
param identityClientId string
param storageAccountName string
param deploymentContainerName string
param appInsightsName string
param nodeVersion string
param maximumInstanceCount int
@description('The app settings of docs/configuration.md (names the app validates at start-up).')
param appSettings object
@description('Client id of a Microsoft Entra app registration: when set, Easy Auth signs people in before /api/manage.')
param manageEntraClientId string = ''
@description('Instances always ready for the durable functions (the `durable` scale group): Microsoft\'s advice for the storage backend on Flex.')
param durableAlwaysReadyInstances int = 0
@description('With network isolation: the subnet the app joins (network.bicep), its outbound traffic then routed through the virtual network. Empty: none.')
param subnetId string = ''

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { name: 'FC1', tier: 'FlexConsumption' }
  properties: { reserved: true }
}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  tags: tags
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identityId}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainerName}'
          authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: identityId }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: 2048
        alwaysReady: durableAlwaysReadyInstances > 0 ? [{ name: 'durable', instanceCount: durableAlwaysReadyInstances }] : []
      }
      runtime: { name: 'node', version: nodeVersion }
    }
  }

  resource settings 'config' = {
    name: 'appsettings'
    properties: union(appSettings, {
      AzureWebJobsStorage__credential: 'managedidentity'
      AzureWebJobsStorage__clientId: identityClientId
      AzureWebJobsStorage__blobServiceUri: storage.properties.primaryEndpoints.blob
      AzureWebJobsStorage__queueServiceUri: storage.properties.primaryEndpoints.queue
      AzureWebJobsStorage__tableServiceUri: storage.properties.primaryEndpoints.table
      APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights.properties.ConnectionString
      APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'
    })
  }
}

// Optional Easy Auth (Microsoft Entra ID) in front of the admin surface: a person signs in before the
// admin page's master key is even asked for, so a leaked page URL alone is not enough. The machine routes
// (export and import webhooks, health probe, the durable system API) stay key-only; the master key is still required.
resource easyAuth 'Microsoft.Web/sites/config@2024-04-01' = if (!empty(manageEntraClientId)) {
  parent: app
  name: 'authsettingsV2'
  // Both write the site's configuration: the app settings first, so the two updates never race.
  dependsOn: [app::settings]
  properties: {
    platform: { enabled: true }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'RedirectToLoginPage'
      redirectToProvider: 'azureactivedirectory'
      excludedPaths: [
        '/api/health'
        '/api/exports'
        '/api/exports/*'
        '/api/imports'
        '/api/imports/*'
        '/runtime/webhooks/*'
      ]
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: manageEntraClientId
          openIdIssuer: '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
        }
        validation: { allowedAudiences: ['api://${manageEntraClientId}', manageEntraClientId] }
      }
    }
    login: { tokenStore: { enabled: false } }
  }
}

output name string = app.name
output uri string = 'https://${app.properties.defaultHostName}'
