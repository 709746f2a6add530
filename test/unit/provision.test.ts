import { ConfigError } from '../../shared/errors';
import { longestGapMinutes, provisionValues } from '../../tools/provision';

/** azd's preprovision hook (tools/provision.ts): what it checks and derives before Bicep runs. */
describe('provision hook', () => {
  it('derives the alert’s interval from SYNC_SCHEDULE: the longest wait between two runs', () => {
    expect(longestGapMinutes('0 */15 * * * *')).toBe(15);
    expect(longestGapMinutes('0 0 */6 * * *')).toBe(360);
    // Weekdays at 09:30: Friday to Monday is the longest wait.
    expect(longestGapMinutes('0 30 9 * * 1-5')).toBe(3 * 24 * 60);
    expect(longestGapMinutes('30 * * * * *')).toBe(1);
  });

  const tenant = {
    TENANT_NAME: 'contoso',
    TENANT_BASE_URL: 'https://contoso.example.com',
    TENANT_AUTH_URL: 'https://login.example.com',
    TENANT_CLIENT_ID: 'm2m',
  };

  it('checks the settings azd hands the app with its own start-up check, naming what is wrong', () => {
    const refused = (env: Record<string, string>) => {
      try {
        provisionValues({ ...tenant, ...env });
        return [];
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
    };
    expect(refused({ SYNC_SCHEDULE: '0 0 0 30 2 *' })).toEqual([
      expect.stringMatching(/^SYNC_SCHEDULE: .*never fires/),
    ]);
    // A folder is not writable in Azure: refused before anything is provisioned.
    expect(refused({ SYNC_SINKS: 'dir:./out' })).toEqual([
      expect.stringMatching(/^SYNC_SINKS: the dir sink/),
    ]);
    expect(refused({ SYNC_SINKS: 'webhook' })).toEqual([
      'SYNC_SINKS: the webhook sink needs DOWNSTREAM_WEBHOOK_URL',
    ]);
    expect(refused({ SYNC_SINKS: 'blob,postgres', POSTGRES_HOST: 'pg.example.com' })).toEqual([]);
    // The import settings the infra passes on: a retention no longer than the admin's wait, a bad secret name.
    expect(refused({ IMPORTS_RETENTION_DAYS: '1' })).toEqual([
      'IMPORTS_RETENTION_DAYS: must be at least a day longer than IMPORTS_ADMIN_WAIT (a waiting import needs its items)',
    ]);
    expect(refused({ IMPORTS_REQUEST_SECRET_NAME: 'not a name!' })).toEqual([
      expect.stringMatching(/^IMPORTS_REQUEST_SECRET_NAME: /),
    ]);
    expect(
      refused({ IMPORT_OPERATIONS_FILE: 'config/import-operations.json', IMPORTS_RETENTION_DAYS: '7' }),
    ).toEqual([]);
  });

  it('makes a resource suffix once and keeps it; the interval follows the schedule', () => {
    const first = provisionValues({ ...tenant, SYNC_SCHEDULE: '0 0 * * * *' });
    expect(first.SYNC_INTERVAL_MINUTES).toBe('60');
    expect(first.AZURE_RESOURCE_SUFFIX).toMatch(/^[0-9a-f]{6}$/);
    expect(provisionValues({ ...tenant, AZURE_RESOURCE_SUFFIX: 'abc123' }).AZURE_RESOURCE_SUFFIX).toBe(
      'abc123',
    );
    expect(provisionValues(tenant).SYNC_INTERVAL_MINUTES).toBe('15');
  });
});
