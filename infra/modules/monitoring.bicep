// Log Analytics + Application Insights, both with local (key) auth off: telemetry is sent with Entra ID.
param logAnalyticsName string
param appInsightsName string
param location string
param tags object
@description('The most Log Analytics ingests a day, in GB (LOG_ANALYTICS_DAILY_CAP_GB); 0 for no cap. Past it, ingestion stops until the next day: alerts then see nothing.')
@minValue(0)
param dailyCapGb int = 1

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
    features: { disableLocalAuth: true }
    // -1 is the API's "no cap".
    workspaceCapping: { dailyQuotaGb: dailyCapGb == 0 ? -1 : dailyCapGb }
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true
  }
}

output appInsightsName string = appInsights.name
