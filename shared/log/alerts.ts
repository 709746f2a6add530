import type { LogField } from './index';

/**
 * The log records Azure Monitor alerts and the workbook read (infra/modules/alerts.bicep): each message and the
 * fields its record always carries. Renaming one breaks test/unit/infra.test.ts and the integration test that
 * provokes each event, not the alert in production.
 */
export const ALERT_RECORDS = {
  'sync run failed': ['runId', 'tenant', 'code'],
  'sync run completed': ['runId', 'tenant'],
  'sync run progress': ['runId', 'tenant', 'stream'],
  'M2M credential rejected': ['clientId', 'code'],
  'delegated session needs a new login': ['tenant', 'reason'],
  'export failed': ['runId', 'tenant', 'code'],
  'import failed': ['runId', 'tenant', 'code'],
  'import waiting for admin': ['runId', 'tenant'],
} as const satisfies Record<string, readonly LogField[]>;

export type AlertRecord = keyof typeof ALERT_RECORDS;
