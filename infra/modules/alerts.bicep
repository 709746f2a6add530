// Alerts on the app's own log records (OpenTelemetry logs, in `traces`), an optional action
// group, and a workbook with the status page's charts. Queries run inside Azure Monitor, against the component:
// no key anywhere. The app's side of the contract (messages and fields) is tested in test/integration.
param appInsightsName string
param location string
param tags object
@description('E-mail address that receives alerts; empty: alerts fire with no receiver.')
param alertEmail string = ''
@description('Sync runs failed in a row before the alert fires.')
param failedSyncsInARow int = 2
@description('Minutes between scheduled syncs (from SYNC_SCHEDULE), for the rules\' descriptions.')
param syncIntervalMinutes int = 15
// The windows are computed by the preprovision hook (tools/provision.ts): the log-alert API accepts only these.
@allowed([5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880])
param syncFailedWindowMinutes int = 60
@allowed([5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880])
param noSuccessfulSyncWindowMinutes int = 30
param noSuccessfulSyncAlert bool = true

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'ag-${appInsightsName}'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'tenantint'
    enabled: true
    emailReceivers: empty(alertEmail) ? [] : [
      { name: 'operator', emailAddress: alertEmail, useCommonAlertSchema: true }
    ]
  }
}

// The app's log records reach Application Insights as OpenTelemetry logs (shared/log, shared/telemetry/setup.ts):
// each is a row of `traces` whose `message` names the event and whose `customDimensions` hold its fields
// (shared/log/fields.ts). Runs are traces too: each run's span is a row of `dependencies` named after its kind.
var rules = [
  {
    name: 'sync-failed-in-a-row'
    description: 'Sync runs failed ${failedSyncsInARow} times in a row'
    severity: 2
    windowMinutes: syncFailedWindowMinutes
    enabled: true
    query: 'traces | where message in ("sync run failed", "sync run completed") | project timestamp, failed = message == "sync run failed", runId = tostring(customDimensions.runId), code = tostring(customDimensions.code) | top ${failedSyncsInARow} by timestamp desc | summarize failures = countif(failed), runs = count() | where runs == ${failedSyncsInARow} and failures == runs'
  }
  {
    name: 'credential-rejected'
    description: 'The identity provider rejected the M2M credential: rotate it or store its current secret'
    severity: 1
    windowMinutes: 15
    enabled: true
    query: 'traces | where message == "M2M credential rejected" | project timestamp, clientId = tostring(customDimensions.clientId), code = tostring(customDimensions.code)'
  }
  {
    name: 'delegated-session-login-required'
    description: 'The admin delegated session needs a new login'
    severity: 2
    windowMinutes: 15
    enabled: true
    query: 'traces | where message == "delegated session needs a new login" | project timestamp, tenant = tostring(customDimensions.tenant), reason = tostring(customDimensions.reason)'
  }
  {
    name: 'exports-failing'
    description: 'Exports are failing'
    severity: 2
    windowMinutes: 60
    enabled: true
    query: 'traces | where message == "export failed" | project timestamp, runId = tostring(customDimensions.runId), code = tostring(customDimensions.code)'
  }
  {
    name: 'imports-failing'
    description: 'Imports (write-back) are failing'
    severity: 2
    windowMinutes: 60
    enabled: true
    query: 'traces | where message == "import failed" | project timestamp, runId = tostring(customDimensions.runId), code = tostring(customDimensions.code)'
  }
  {
    name: 'import-waiting-for-admin'
    description: 'An import waits for an admin to sign in again (the admin page, /api/manage)'
    severity: 2
    windowMinutes: 60
    enabled: true
    query: 'traces | where message == "import waiting for admin" | project timestamp, runId = tostring(customDimensions.runId)'
  }
  {
    name: 'no-successful-sync'
    description: 'No successful sync for twice the schedule interval (${2 * syncIntervalMinutes} minutes)'
    severity: 2
    windowMinutes: noSuccessfulSyncWindowMinutes
    enabled: noSuccessfulSyncAlert
    // A pass that goes on (its slices' `sync run progress`) counts as much as one that completed: a multi-hour full
    // pass of a large tenant is not a sync that stopped succeeding.
    query: 'union (traces | where message in ("sync run completed", "sync run progress") | project timestamp, runId = tostring(customDimensions.runId)), (print timestamp = datetime(null), runId = "") | summarize succeeded = countif(isnotempty(runId)) | where succeeded == 0'
  }
]

resource alerts 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = [for rule in rules: {
  name: '${rule.name}-${appInsightsName}'
  location: location
  tags: tags
  properties: {
    displayName: rule.description
    description: rule.description
    severity: rule.severity
    enabled: rule.enabled
    scopes: [ appInsights.id ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT${rule.windowMinutes}M'
    criteria: {
      allOf: [
        {
          query: rule.query
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: { numberOfEvaluationPeriods: 1, minFailingPeriodsToAlert: 1 }
        }
      ]
    }
    autoMitigate: true
    actions: { actionGroups: [ actionGroup.id ] }
  }
}]

// The status page's charts over the same records: runs by outcome, changes per stream, run duration.
var workbookContent = {
  version: 'Notebook/1.0'
  items: [
    {
      type: 1
      content: { json: '## Tenant integrations — runs\nThe same records the status page (/api/manage/status) and the alerts read.' }
    }
    {
      type: 3
      content: {
        version: 'KqlItem/1.0'
        title: 'Runs over time, by kind and outcome'
        query: 'dependencies | where name in ("sync run", "export run", "import run", "device login") | summarize runs = count() by bin(timestamp, 1h), outcome = strcat(tostring(customDimensions.kind), " ", tostring(customDimensions.outcome)) | render columnchart'
        queryType: 0
        resourceType: 'microsoft.insights/components'
        visualization: 'barchart'
      }
    }
    {
      type: 3
      content: {
        version: 'KqlItem/1.0'
        title: 'Time per stream slice'
        query: 'dependencies | where name == "sync stream" | summarize p50 = percentile(duration, 50), p95 = percentile(duration, 95) by stream = tostring(customDimensions.stream), bin(timestamp, 1h) | render timechart'
        queryType: 0
        resourceType: 'microsoft.insights/components'
        visualization: 'timechart'
      }
    }
    {
      type: 3
      content: {
        version: 'KqlItem/1.0'
        title: 'GraphQL request duration'
        query: 'dependencies | where name == "graphql" | summarize p50 = percentile(duration, 50), p95 = percentile(duration, 95), failed = countif(success == false) by bin(timestamp, 1h) | render timechart'
        queryType: 0
        resourceType: 'microsoft.insights/components'
        visualization: 'timechart'
      }
    }
  ]
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(appInsights.id, 'tenant-integrations-runs')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'Tenant integrations — runs'
    category: 'workbook'
    sourceId: appInsights.id
    serializedData: string(workbookContent)
  }
}

output actionGroupId string = actionGroup.id
output alertRuleCount int = length(rules)
