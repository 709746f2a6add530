// One storage account for the Functions host, durable state (tables, queues, blobs), sync checkpoints,
// exports and the deployment package. Shared-key access is off: everything uses the managed identity.
param name string
param location string
param tags object
param deploymentContainerName string
@description('Days an import\'s stored items are kept (IMPORTS_RETENTION_DAYS); the app deletes its ledger rows itself.')
@minValue(1)
param importsRetentionDays int = 30
@description('False with network isolation (VNET_ENABLED): the public endpoint closed, the app reaching blob, queue and table through private endpoints (network.bicep). azd still deploys: Flex Consumption takes the package through the app\'s publish endpoint and writes it here from inside.')
param publicAccess bool = true

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: publicAccess ? 'Enabled' : 'Disabled'
    networkAcls: publicAccess ? { defaultAction: 'Allow', bypass: 'AzureServices' } : { defaultAction: 'Deny', bypass: 'None' }
  }
}

resource blobs 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    // Exports and checkpoints survive an accidental delete for a week.
    deleteRetentionPolicy: { enabled: true, days: 7 }
    containerDeleteRetentionPolicy: { enabled: true, days: 7 }
  }
}

resource deployment 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource exports 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: 'exports'
  properties: { publicAccess: 'None' }
}

// The sync's state (snapshots, per-page checkpoint logs, the run record) and its blob sink's output.
resource syncState 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: 'sync-state'
  properties: { publicAccess: 'None' }
}

resource syncChanges 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobs
  name: 'sync-changes'
  properties: { publicAccess: 'None' }
}

// Export files are short-lived: delete them after a week; import batches after IMPORTS_RETENTION_DAYS.
resource lifecycle 'Microsoft.Storage/storageAccounts/managementPolicies@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    policy: {
      rules: [
        {
          name: 'expire-exports'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: { blobTypes: ['blockBlob'], prefixMatch: ['exports/'] }
            actions: { baseBlob: { delete: { daysAfterModificationGreaterThan: 7 } } }
          }
        }
        {
          // An import's items (its batch and keys), as IMPORTS_RETENTION_DAYS says; the app keeps it longer than any wait.
          name: 'expire-imports'
          enabled: true
          type: 'Lifecycle'
          definition: {
            filters: { blobTypes: ['blockBlob'], prefixMatch: ['imports/'] }
            actions: { baseBlob: { delete: { daysAfterModificationGreaterThan: importsRetentionDays } } }
          }
        }
      ]
    }
  }
}

output name string = storage.name
output deploymentContainerName string = deployment.name
