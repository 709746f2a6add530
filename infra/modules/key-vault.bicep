// Two vaults in RBAC mode, so each role can be scoped to exactly one kind of secret: Azure cannot scope a
// role to a secret before it exists, and creating the secrets here would overwrite them on every provision.
//   credentials (kv-…): the M2M client secret — the app may only read it.
//   sessions (kvs-…):   delegated refresh tokens — the app reads and writes them.
param credentialsVaultName string
param sessionsVaultName string
param location string
param tags object
@description('False with network isolation (VNET_ENABLED): public endpoints closed, the app reaching both vaults through private endpoints (network.bicep). The client secret is then set from inside the network (docs/deploy.md).')
param publicAccess bool = true

var properties = {
  tenantId: tenant().tenantId
  sku: { family: 'A', name: 'standard' }
  enableRbacAuthorization: true
  enableSoftDelete: true
  softDeleteRetentionInDays: 90
  enablePurgeProtection: true
  publicNetworkAccess: publicAccess ? 'Enabled' : 'Disabled'
  networkAcls: publicAccess ? { defaultAction: 'Allow', bypass: 'AzureServices' } : { defaultAction: 'Deny', bypass: 'None' }
}

resource credentials 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: credentialsVaultName
  location: location
  tags: tags
  properties: properties
}

resource sessions 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: sessionsVaultName
  location: location
  tags: tags
  properties: properties
}

output credentialsVaultName string = credentials.name
output credentialsVaultUri string = credentials.properties.vaultUri
output sessionsVaultName string = sessions.name
output sessionsVaultUri string = sessions.properties.vaultUri
