import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** The preprovision hook as built, with `--print`: what azd's environment would get, calling neither azd nor Azure. */
const tenant = {
  TENANT_NAME: 'contoso',
  TENANT_BASE_URL: 'https://contoso.example.com',
  TENANT_AUTH_URL: 'https://login.example.com',
  TENANT_CLIENT_ID: 'm2m',
};

describe('provision --print', () => {
  it('--print: every value the hook would set, as one JSON object on stdout, without azd', () => {
    const out = execFileSync(
      process.execPath,
      [join(__dirname, '..', '..', 'dist', 'tools', 'provision.js'), '--print'],
      {
        // No azd and no az on the PATH: --print must not need them.
        env: {
          PATH: '/nonexistent',
          ...tenant,
          SYNC_SCHEDULE: '0 0 2 * * *',
          AZURE_RESOURCE_SUFFIX: 'abc123',
        },
        encoding: 'utf8',
      },
    );
    expect(JSON.parse(out)).toEqual({
      SYNC_INTERVAL_MINUTES: '1440',
      AZURE_RESOURCE_SUFFIX: 'abc123',
      SYNC_FAILED_WINDOW_MINUTES: '2880',
      NO_SUCCESSFUL_SYNC_WINDOW_MINUTES: '2880',
      NO_SUCCESSFUL_SYNC_ALERT: 'true',
    });
    expect(out.trim().split('\n')).toHaveLength(1);
  });
});
