// Network isolation (vnetEnabled, VNET_ENABLED), as the azd Flex Consumption quickstarts offer it: the app joins a
// virtual network; storage (blob, queue, table) and both Key Vaults are reached through private endpoints whose names
// resolve in private DNS zones linked to it, and their public endpoints are closed (storage.bicep, key-vault.bicep).
// The app's outbound traffic to the internet — the tenant's API, a webhook receiver, OTLP — leaves through a NAT
// gateway with one static public IP: a subnet of a new network has no default outbound access to count on, and a
// tenant or the Durable Task Scheduler can allow that one address.
param name string
param location string
param tags object
param storageAccountName string
param credentialsVaultName string
param sessionsVaultName string
@description('Address space of the virtual network; the two subnets are its first /24s. Change it where it would overlap a network it is peered with.')
param addressPrefix string = '10.70.0.0/16'

var appSubnetPrefix = cidrSubnet(addressPrefix, 24, 0)
var endpointsSubnetPrefix = cidrSubnet(addressPrefix, 24, 1)

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource credentials 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: credentialsVaultName
}

resource sessions 'Microsoft.KeyVault/vaults@2023-07-01' existing = {
  name: sessionsVaultName
}

resource egressIp 'Microsoft.Network/publicIPAddresses@2024-05-01' = {
  name: 'pip-${name}'
  location: location
  tags: tags
  sku: { name: 'Standard' }
  properties: { publicIPAllocationMethod: 'Static', publicIPAddressVersion: 'IPv4' }
}

resource nat 'Microsoft.Network/natGateways@2024-05-01' = {
  name: 'ng-${name}'
  location: location
  tags: tags
  sku: { name: 'Standard' }
  properties: {
    idleTimeoutInMinutes: 4
    publicIpAddresses: [{ id: egressIp.id }]
  }
}

resource vnet 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: 'vnet-${name}'
  location: location
  tags: tags
  properties: {
    addressSpace: { addressPrefixes: [addressPrefix] }
    subnets: [
      {
        // Flex Consumption's VNet integration needs a subnet delegated to Microsoft.App/environments.
        name: 'app'
        properties: {
          addressPrefix: appSubnetPrefix
          delegations: [{ name: 'flex', properties: { serviceName: 'Microsoft.App/environments' } }]
          natGateway: { id: nat.id }
          defaultOutboundAccess: false
        }
      }
      {
        name: 'private-endpoints'
        properties: {
          addressPrefix: endpointsSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
          defaultOutboundAccess: false
        }
      }
    ]
  }

  resource appSubnet 'subnets' existing = {
    name: 'app'
  }

  resource endpointsSubnet 'subnets' existing = {
    name: 'private-endpoints'
  }
}

// One private endpoint per store and sub-resource, each registered in the zone its public name resolves through.
// Key Vault's zone has no suffix in environment(): this is the public cloud's name.
var endpoints = [
  { name: 'blob', target: storage.id, group: 'blob', zone: 'privatelink.blob.${environment().suffixes.storage}' }
  { name: 'queue', target: storage.id, group: 'queue', zone: 'privatelink.queue.${environment().suffixes.storage}' }
  { name: 'table', target: storage.id, group: 'table', zone: 'privatelink.table.${environment().suffixes.storage}' }
  { name: 'kv', target: credentials.id, group: 'vault', zone: 'privatelink.vaultcore.azure.net' }
  { name: 'kvs', target: sessions.id, group: 'vault', zone: 'privatelink.vaultcore.azure.net' }
]
var zoneNames = [
  'privatelink.blob.${environment().suffixes.storage}'
  'privatelink.queue.${environment().suffixes.storage}'
  'privatelink.table.${environment().suffixes.storage}'
  'privatelink.vaultcore.azure.net'
]

resource zones 'Microsoft.Network/privateDnsZones@2024-06-01' = [
  for zone in zoneNames: {
    name: zone
    location: 'global'
    tags: tags
  }
]

resource zoneLinks 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01' = [
  for (zone, i) in zoneNames: {
    parent: zones[i]
    name: 'link-${name}'
    location: 'global'
    tags: tags
    properties: { registrationEnabled: false, virtualNetwork: { id: vnet.id } }
  }
]

resource privateEndpoints 'Microsoft.Network/privateEndpoints@2024-05-01' = [
  for e in endpoints: {
    name: 'pe-${e.name}-${name}'
    location: location
    tags: tags
    properties: {
      subnet: { id: vnet::endpointsSubnet.id }
      privateLinkServiceConnections: [
        {
          name: e.name
          properties: { privateLinkServiceId: e.target, groupIds: [e.group] }
        }
      ]
    }
  }
]

resource endpointZones 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-05-01' = [
  for (e, i) in endpoints: {
    parent: privateEndpoints[i]
    name: 'default'
    properties: {
      privateDnsZoneConfigs: [
        {
          name: e.group
          properties: { privateDnsZoneId: resourceId('Microsoft.Network/privateDnsZones', e.zone) }
        }
      ]
    }
    dependsOn: [zones]
  }
]

output appSubnetId string = vnet::appSubnet.id
@description('The one address the app\'s outbound traffic comes from: for a tenant\'s or a receiver\'s allow-list.')
output egressIpAddress string = egressIp.properties.ipAddress
