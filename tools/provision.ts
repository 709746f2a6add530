import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../shared/config';
import { ConfigError } from '../shared/errors';
import { nextOccurrence, parseNcrontab } from '../shared/ncrontab';

/**
 * azd's `preprovision` hook (azure.yaml): before Bicep runs, from the azd environment's values —
 * - the app settings azd passes on are checked with the app's own start-up check, so a bad SYNC_SCHEDULE or
 *   SYNC_SINKS stops `azd up` here, named, instead of failing every start in Azure;
 * - SYNC_INTERVAL_MINUTES is derived from SYNC_SCHEDULE (the longest gap between two runs), so the
 *   no-successful-sync alert waits as long as the schedule does;
 * - AZURE_RESOURCE_SUFFIX is made once per deployment: resource names include it, and `postdown` clears it, so
 *   `azd up` after `azd down` gets new names — a purge-protected Key Vault keeps its old name for 90 days.
 * `azd down`'s `postdown` hook runs this with `--after-down`.
 */

/** The longest wait between consecutive runs of a schedule, in whole minutes (at least 1), over eight days. */
export function longestGapMinutes(schedule: string, fromMs = Date.UTC(2026, 0, 5)): number {
  const parsed = parseNcrontab(schedule);
  let at = nextOccurrence(parsed, fromMs);
  let longest = 0;
  const until = at + 8 * 86_400_000;
  for (let runs = 0; at < until && runs < 20_000; runs++) {
    const next = nextOccurrence(parsed, at);
    longest = Math.max(longest, next - at);
    at = next;
  }
  return Math.max(1, Math.ceil(longest / 60_000));
}

/** The settings the hook derives, from the azd environment's values. */
export function provisionValues(env: Record<string, string | undefined>): Record<string, string> {
  // The settings azd hands the app (infra/main.parameters.json), with the tenant's four so the check is complete.
  loadConfig({
    SYNC_SCHEDULE: env.SYNC_SCHEDULE,
    SYNC_STREAMS: env.SYNC_STREAMS,
    SYNC_SINKS: env.SYNC_SINKS,
    SYNC_FORMAT: env.SYNC_FORMAT,
    DOWNSTREAM_WEBHOOK_URL: env.DOWNSTREAM_WEBHOOK_URL,
    EXPORTS_MAX_CONCURRENT: env.EXPORTS_MAX_CONCURRENT,
    IMPORT_OPERATIONS_FILE: env.IMPORT_OPERATIONS_FILE,
    IMPORTS_REQUEST_SECRET_NAME: env.IMPORTS_REQUEST_SECRET_NAME,
    IMPORTS_RETENTION_DAYS: env.IMPORTS_RETENTION_DAYS,
    TENANT_NAME: env.TENANT_NAME,
    TENANT_BASE_URL: env.TENANT_BASE_URL,
    TENANT_AUTH_URL: env.TENANT_AUTH_URL,
    TENANT_CLIENT_ID: env.TENANT_CLIENT_ID,
    // What Azure provides, so sinks that need storage or a host are judged as they will be there.
    AzureWebJobsStorage__blobServiceUri: 'https://account.blob.core.windows.net',
    POSTGRES_HOST: env.POSTGRES_HOST,
    POSTGRES_USER: env.POSTGRES_HOST ? 'the-app-identity' : undefined,
    WEBSITE_INSTANCE_ID: 'azure',
  });
  return {
    SYNC_INTERVAL_MINUTES: String(longestGapMinutes(env.SYNC_SCHEDULE || '0 */15 * * * *')),
    AZURE_RESOURCE_SUFFIX: env.AZURE_RESOURCE_SUFFIX || randomBytes(3).toString('hex'),
  };
}

function azdSet(name: string, value: string): void {
  execFileSync('azd', ['env', 'set', name, value], { stdio: ['ignore', 'ignore', 'inherit'] });
}

if (require.main === module) {
  try {
    if (process.argv.includes('--after-down')) {
      // The next `azd up` gets new resource names (the old vault is soft-deleted under its name).
      azdSet('AZURE_RESOURCE_SUFFIX', '');
      process.stderr.write('provision: resource names will be new on the next azd up\n');
    } else {
      const values = provisionValues(process.env);
      for (const [name, value] of Object.entries(values)) azdSet(name, value);
      process.stderr.write(
        `provision: settings valid; SYNC_INTERVAL_MINUTES=${values.SYNC_INTERVAL_MINUTES}, AZURE_RESOURCE_SUFFIX=${values.AZURE_RESOURCE_SUFFIX}\n`,
      );
    }
  } catch (err) {
    process.stderr.write(
      `provision: ${err instanceof ConfigError ? err.message : (err as Error).message}\nFix it with \`azd env set NAME VALUE\`, then run azd up again.\n`,
    );
    process.exit(1);
  }
}
