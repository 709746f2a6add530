// The Durable Task Scheduler (durableBackend = 'scheduler'): Microsoft's managed backend for Durable Functions, the one
// it recommends on Flex Consumption. The orchestrations' state lives there instead of in the storage account's queues
// and tables; the app reaches it with its identity (the role below), never a key.
param name string
param location string
param tags object
@description('The task hub: the durable extension\'s hubName (DURABLE_TASK_HUB).')
param taskHubName string
@description('With network isolation: the one address the app\'s traffic leaves from (its NAT gateway), the only one the scheduler answers. Empty: any address, the identity\'s role guarding it. Private endpoints for the scheduler were in limited preview when this was written (docs/deploy.md).')
param allowedIpAddress string = ''
resource scheduler 'Microsoft.DurableTask/schedulers@2025-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    sku: { name: 'Consumption' }
    // An empty list refuses every caller: without isolation the identity's role is what guards it.
    ipAllowlist: empty(allowedIpAddress) ? ['0.0.0.0/0'] : ['${allowedIpAddress}/32']
  }
}

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2025-11-01' = {
  parent: scheduler
  name: taskHubName
}

// The app reaches it with its identity: the role is granted in access.bicep, with every other one.
output name string = scheduler.name
output endpoint string = scheduler.properties.endpoint
output taskHubName string = taskHub.name
