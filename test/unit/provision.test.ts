import { ConfigError } from '../../shared/errors';
import {
  ACCEPTED_WINDOW_MINUTES,
  acceptedWindowMinutes,
  alertWindows,
  armResourceGroup,
  longestGapMinutes,
  provisionValues,
} from '../../tools/provision';

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

  it('checks the settings azd hands the app with its own start-up check, naming what is wrong', async () => {
    const refused = async (env: Record<string, string>) => {
      try {
        await provisionValues({ ...tenant, ...env });
        return [];
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
    };
    expect(await refused({ SYNC_SCHEDULE: '0 0 0 30 2 *' })).toEqual([
      expect.stringMatching(/^SYNC_SCHEDULE: .*never fires/),
    ]);
    // A folder is not writable in Azure: refused before anything is provisioned.
    expect(await refused({ SYNC_SINKS: 'dir:./out' })).toEqual([
      expect.stringMatching(/^SYNC_SINKS: the dir sink/),
    ]);
    expect(await refused({ SYNC_SINKS: 'webhook' })).toEqual([
      'SYNC_SINKS: the webhook sink needs DOWNSTREAM_WEBHOOK_URL',
    ]);
    expect(await refused({ SYNC_SINKS: 'blob,postgres', POSTGRES_HOST: 'pg.example.com' })).toEqual([]);
    // The import settings the infra passes on: a retention no longer than the admin's wait, a bad secret name.
    expect(await refused({ IMPORTS_RETENTION_DAYS: '1' })).toEqual([
      'IMPORTS_RETENTION_DAYS: must be at least a day longer than IMPORTS_ADMIN_WAIT (a waiting import needs its items)',
    ]);
    expect(await refused({ IMPORTS_REQUEST_SECRET_NAME: 'not a name!' })).toEqual([
      expect.stringMatching(/^IMPORTS_REQUEST_SECRET_NAME: /),
    ]);
    expect(
      await refused({ IMPORT_OPERATIONS_FILE: 'config/import-operations.json', IMPORTS_RETENTION_DAYS: '7' }),
    ).toEqual([]);
  });

  it('makes a resource suffix once and keeps it; the interval follows the schedule', async () => {
    const first = await provisionValues({ ...tenant, SYNC_SCHEDULE: '0 0 * * * *' });
    expect(first.SYNC_INTERVAL_MINUTES).toBe('60');
    expect(first.AZURE_RESOURCE_SUFFIX).toMatch(/^[0-9a-f]{6}$/);
    expect(
      (await provisionValues({ ...tenant, AZURE_RESOURCE_SUFFIX: 'abc123' })).AZURE_RESOURCE_SUFFIX,
    ).toBe('abc123');
    expect((await provisionValues(tenant)).SYNC_INTERVAL_MINUTES).toBe('15');
  });

  // What `azd provision` meets for each: the log-alert API refuses any window not in its list.
  it.each([
    ['every 5 minutes', '0 */5 * * * *', 5, 60, 30, true],
    ['every 15 minutes (the default)', '0 */15 * * * *', 15, 60, 30, true],
    ['every 20 minutes', '0 */20 * * * *', 20, 120, 45, true],
    ['every 2 hours', '0 0 */2 * * *', 120, 1440, 240, true],
    ['every 4 hours', '0 0 */4 * * *', 240, 1440, 1440, true],
    ['every 6 hours', '0 0 */6 * * *', 360, 1440, 1440, true],
    ['daily at 02:00', '0 0 2 * * *', 1440, 2880, 2880, true],
    ['weekdays at 09:30', '0 30 9 * * 1-5', 4320, 2880, 2880, false],
    ['weekly on Sunday', '0 0 3 * * 0', 10080, 2880, 2880, false],
    ['Friday the 13th', '0 0 0 13 * 5', undefined, 2880, 2880, false],
  ])('%s (%s): accepted windows', async (_, schedule, interval, failedWindow, quietWindow, quietOn) => {
    const v = await provisionValues({ ...tenant, SYNC_SCHEDULE: schedule });
    if (interval !== undefined) expect(Number(v.SYNC_INTERVAL_MINUTES)).toBe(interval);
    for (const name of ['SYNC_FAILED_WINDOW_MINUTES', 'NO_SUCCESSFUL_SYNC_WINDOW_MINUTES'])
      expect(ACCEPTED_WINDOW_MINUTES).toContain(Number(v[name]));
    expect([Number(v.SYNC_FAILED_WINDOW_MINUTES), Number(v.NO_SUCCESSFUL_SYNC_WINDOW_MINUTES)]).toEqual([
      failedWindow,
      quietWindow,
    ]);
    expect(v.NO_SUCCESSFUL_SYNC_ALERT).toBe(String(quietOn));
  });

  it('rounds a window up to the next accepted one, never below what the rule needs, at most two days', () => {
    for (let minutes = 1; minutes <= 3000; minutes++) {
      const w = acceptedWindowMinutes(minutes);
      expect(ACCEPTED_WINDOW_MINUTES).toContain(w);
      if (minutes <= 2880) expect(w).toBeGreaterThanOrEqual(minutes);
      else expect(w).toBe(2880);
    }
    expect(alertWindows(15)).toEqual({
      SYNC_FAILED_WINDOW_MINUTES: 60,
      NO_SUCCESSFUL_SYNC_WINDOW_MINUTES: 30,
      NO_SUCCESSFUL_SYNC_ALERT: true,
    });
  });

  it('never makes a new suffix where the resource group exists: names azd env refresh (Azure’s answer stands in)', async () => {
    // Azure Resource Manager cannot be reached here: the lookup is given, as armResourceGroup would answer.
    const lookups: string[] = [];
    const exists = (suffix?: string) => async (name: string) => {
      lookups.push(name);
      return { exists: true as const, suffix };
    };
    await expect(
      provisionValues({ ...tenant, AZURE_ENV_NAME: 'prod' }, { lookup: exists('a1b2c3') }),
    ).rejects.toThrow(
      /rg-prod exists already \(its resource suffix is a1b2c3\).*azd env refresh.*AZURE_RESOURCE_SUFFIX a1b2c3/,
    );
    expect(lookups).toEqual(['rg-prod']);
    await expect(
      provisionValues({ ...tenant, AZURE_ENV_NAME: 'prod' }, { lookup: exists() }),
    ).rejects.toThrow(/azd env refresh/);
    // A suffix given is kept without asking (where the environment also knows the deployed backend); a group that
    // does not exist gets a new one.
    const notAsked = async (): Promise<never> => {
      throw new Error('not asked');
    };
    expect(
      (
        await provisionValues(
          {
            ...tenant,
            AZURE_ENV_NAME: 'prod',
            AZURE_RESOURCE_SUFFIX: 'a1b2c3',
            PROVISIONED_DURABLE_BACKEND: 'storage',
          },
          { lookup: notAsked },
        )
      ).AZURE_RESOURCE_SUFFIX,
    ).toBe('a1b2c3');
    // A fresh environment (a CI runner's) does not know the deployed backend: the group's tag says it, asked once.
    lookups.length = 0;
    const tagged = async (name: string) => {
      lookups.push(name);
      return { exists: true as const, suffix: 'a1b2c3', durableBackend: 'storage' };
    };
    await expect(
      provisionValues(
        { ...tenant, AZURE_ENV_NAME: 'prod', AZURE_RESOURCE_SUFFIX: 'a1b2c3', DURABLE_BACKEND: 'scheduler' },
        { lookup: tagged },
      ),
    ).rejects.toThrow(
      /DURABLE_BACKEND is scheduler, but the deployed app keeps its orchestrations in storage/,
    );
    expect(lookups).toEqual(['rg-prod']);
    lookups.length = 0;
    await expect(
      provisionValues(
        { ...tenant, AZURE_ENV_NAME: 'prod', DURABLE_BACKEND: 'scheduler' },
        { lookup: tagged },
      ),
    ).rejects.toThrow(/DURABLE_BACKEND is scheduler/);
    expect(lookups).toEqual(['rg-prod']);
    expect(
      (
        await provisionValues(
          { ...tenant, AZURE_ENV_NAME: 'new' },
          { lookup: async () => ({ exists: false }) },
        )
      ).AZURE_RESOURCE_SUFFIX,
    ).toMatch(/^[0-9a-f]{6}$/);
    // Where Azure cannot be asked, nothing is made: the hook stops, naming why.
    await expect(
      provisionValues({ ...tenant, AZURE_ENV_NAME: 'prod' }, { lookup: armResourceGroup(undefined) }),
    ).rejects.toThrow(/AZURE_SUBSCRIPTION_ID is not set/);
  });
});
