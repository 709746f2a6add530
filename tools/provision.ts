import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { loadConfig } from '../shared/app';
import { ConfigError } from '../shared/errors';
import { nextOccurrence, parseNcrontab } from '../shared/ncrontab';
import {
  appSettingsParameter,
  HOST_SETTING,
  importableVariables,
  NOT_DEPLOYABLE,
  passedThroughSettings,
  settingsToRestore,
} from './app-settings';
import { switchRefusal } from './durable-backend';

/**
 * azd's `preprovision` hook (azure.yaml): before Bicep runs, from the azd environment's values —
 * - the app settings azd passes on are checked with the app's own start-up check, so a bad SYNC_SCHEDULE or
 *   SYNC_SINKS stops `azd up` here, named, instead of failing every start in Azure;
 * - SYNC_INTERVAL_MINUTES is derived from SYNC_SCHEDULE (the longest gap between two runs), and from it each alert
 *   rule's window (`*_WINDOW_MINUTES`), rounded up to one the log-alert API accepts — Bicep only takes them;
 * - AZURE_RESOURCE_SUFFIX is made once per deployment: resource names include it, and `postdown` clears it, so
 *   `azd up` after `azd down` gets new names — a purge-protected Key Vault keeps its old name for 90 days. It is
 *   never made anew where the resource group exists;
 * - APP_SETTINGS_BASE64 carries every other setting the operator chose (tools/app-settings.ts).
 * `--import-variables` takes a GitHub repository's variables into the azd environment (the workflows).
 * `azd down`'s `postdown` hook runs this with `--after-down`; `--print` prints the values as JSON, calling nothing.
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

/**
 * The windows the log-alert API accepts for a rule (`windowSize`), in minutes: any other value fails the deployment.
 * Bicep cannot be run here, so what a window would be is computed by this hook (and tested), and Bicep takes it.
 */
export const ACCEPTED_WINDOW_MINUTES = [5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880] as const;
const LONGEST_WINDOW = ACCEPTED_WINDOW_MINUTES[ACCEPTED_WINDOW_MINUTES.length - 1];

/** Sync runs that must fail in a row before the alert fires (infra/modules/alerts.bicep). */
export const FAILED_SYNCS_IN_A_ROW = 2;

/** The smallest accepted window of at least `minutes`; past the longest (two days), the longest. */
export function acceptedWindowMinutes(minutes: number): number {
  return ACCEPTED_WINDOW_MINUTES.find((w) => w >= minutes) ?? LONGEST_WINDOW;
}

/**
 * Each alert rule's window for a schedule whose longest gap between runs is `intervalMinutes`:
 * - sync failed in a row: room for that many runs (twice the gap each, at least an hour). Past two days the window
 *   holds fewer runs than that where the gaps are long (a weekend): the alert then fires only on failures in a row
 *   inside two days;
 * - no successful sync: twice the gap (at least 30 minutes). Past two days no window can wait that long, so that
 *   alert is off rather than firing in every long gap; the failed-in-a-row alert still watches the runs.
 */
export function alertWindows(intervalMinutes: number) {
  const quiet = Math.max(30, 2 * intervalMinutes);
  return {
    SYNC_FAILED_WINDOW_MINUTES: acceptedWindowMinutes(
      Math.max(60, 2 * FAILED_SYNCS_IN_A_ROW * intervalMinutes),
    ),
    NO_SUCCESSFUL_SYNC_WINDOW_MINUTES: acceptedWindowMinutes(quiet),
    NO_SUCCESSFUL_SYNC_ALERT: quiet <= LONGEST_WINDOW,
  };
}

/** The resource group azd deploys to, and the suffix its tag records (tools/provision.ts writes it; Bicep tags it). */
export const SUFFIX_TAG = 'azd-resource-suffix';
/** The group's tag that records the durable backend it was provisioned with (main.bicep). */
export const BACKEND_TAG = 'azd-durable-backend';
export const resourceGroupName = (environmentName: string) => `rg-${environmentName}`;

/** What Azure says of a resource group: absent, or there with its suffix tag (when it has one). */
export type ResourceGroupLookup = (
  name: string,
) => Promise<{ exists: false } | { exists: true; suffix?: string; durableBackend?: string }>;

/**
 * Asks Azure Resource Manager whether the group exists, signed in as azd is (or the Azure CLI): the hook runs inside
 * `azd provision`, so azd's own login is there. Not tested here: Azure's control plane cannot exist on this machine.
 */
export function armResourceGroup(subscriptionId: string | undefined): ResourceGroupLookup {
  return async (name) => {
    if (!subscriptionId)
      throw new Error(
        `cannot tell whether ${name} exists: AZURE_SUBSCRIPTION_ID is not set in the azd environment`,
      );
    const { AzureCliCredential, AzureDeveloperCliCredential, ChainedTokenCredential } =
      await import('@azure/identity');
    const token = await new ChainedTokenCredential(
      new AzureDeveloperCliCredential(),
      new AzureCliCredential(),
    ).getToken('https://management.azure.com/.default');
    const res = await fetch(
      `https://management.azure.com/subscriptions/${encodeURIComponent(subscriptionId)}/resourcegroups/${encodeURIComponent(name)}?api-version=2021-04-01`,
      {
        headers: { authorization: `Bearer ${token.token}` },
        redirect: 'error',
        signal: AbortSignal.timeout(30_000),
      },
    );
    if (res.status === 404) return { exists: false };
    if (!res.ok) throw new Error(`cannot tell whether ${name} exists: Azure answered HTTP ${res.status}`);
    const body = (await res.json()) as { tags?: Record<string, string> };
    return { exists: true, suffix: body.tags?.[SUFFIX_TAG], durableBackend: body.tags?.[BACKEND_TAG] };
  };
}

/** One lookup of the group, however many questions are asked of it. */
function once(lookup: ResourceGroupLookup, name: string): () => ReturnType<ResourceGroupLookup> {
  let answer: ReturnType<ResourceGroupLookup> | undefined;
  return () => (answer ??= lookup(name));
}

/** The settings the hook derives, from the azd environment's values. */
export async function provisionValues(
  given: Record<string, string | undefined>,
  options: { lookup?: ResourceGroupLookup } = {},
): Promise<Record<string, string>> {
  // A credential in the azd environment would reach app settings, deployment history and CI logs: refused, named.
  if (given.OTEL_EXPORTER_OTLP_HEADERS)
    throw new Error(`OTEL_EXPORTER_OTLP_HEADERS: ${NOT_DEPLOYABLE.OTEL_EXPORTER_OTLP_HEADERS}`);
  const group =
    given.AZURE_ENV_NAME && options.lookup
      ? once(options.lookup, resourceGroupName(given.AZURE_ENV_NAME))
      : undefined;
  // A fresh environment (CI's, a new clone's) has no PROVISIONED_DURABLE_BACKEND: the group's tag says it.
  const deployedBackend =
    given.PROVISIONED_DURABLE_BACKEND ||
    (group ? await group().then((g) => (g.exists ? g.durableBackend : undefined)) : undefined);
  const backendSwitch = switchRefusal({ ...given, PROVISIONED_DURABLE_BACKEND: deployedBackend });
  if (backendSwitch) throw new Error(backendSwitch);
  // What the deployment holds and this machine's environment does not (a teammate's, a fresh clone's): restored.
  const restored = settingsToRestore(given);
  const env = { ...given, ...restored };
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
    // Every other setting the operator chose, as the app will get it (tools/app-settings.ts).
    ...passedThroughSettings(env),
  });
  const interval = longestGapMinutes(env.SYNC_SCHEDULE || '0 */15 * * * *');
  const windows = alertWindows(interval);
  return {
    ...restored,
    SYNC_INTERVAL_MINUTES: String(interval),
    AZURE_RESOURCE_SUFFIX: env.AZURE_RESOURCE_SUFFIX || (await newSuffix(env, group)),
    SYNC_FAILED_WINDOW_MINUTES: String(windows.SYNC_FAILED_WINDOW_MINUTES),
    NO_SUCCESSFUL_SYNC_WINDOW_MINUTES: String(windows.NO_SUCCESSFUL_SYNC_WINDOW_MINUTES),
    NO_SUCCESSFUL_SYNC_ALERT: String(windows.NO_SUCCESSFUL_SYNC_ALERT),
    APP_SETTINGS_BASE64: appSettingsParameter(env),
  };
}

/** What the hook itself sets in the azd environment on every provision (AZURE_RESOURCE_SUFFIX only when missing). */
export const DERIVED = [
  'SYNC_INTERVAL_MINUTES',
  'SYNC_FAILED_WINDOW_MINUTES',
  'NO_SUCCESSFUL_SYNC_WINDOW_MINUTES',
  'NO_SUCCESSFUL_SYNC_ALERT',
  'APP_SETTINGS_BASE64',
] as const;

/**
 * `--import-variables`: the repository's variables (REPOSITORY_VARIABLES, the workflow's `toJSON(vars)`) into the azd
 * environment, those of them a deployment reads (importableVariables) — so a setting is a repository variable of its
 * own name, and the workflow needs no list that could fall behind the parameters file. Answers what it sets.
 */
export function variablesToImport(json: string | undefined, root: string): Record<string, string> {
  let vars: unknown;
  try {
    vars = JSON.parse(json || '{}');
  } catch {
    throw new Error('REPOSITORY_VARIABLES is not JSON: pass `${{ toJSON(vars) }}`');
  }
  if (!vars || typeof vars !== 'object' || Array.isArray(vars))
    throw new Error('REPOSITORY_VARIABLES is not an object of variables');
  const wanted = new Set(importableVariables(root, DERIVED));
  return Object.fromEntries(
    Object.entries(vars as Record<string, unknown>).filter(
      (e): e is [string, string] =>
        (wanted.has(e[0]) || HOST_SETTING.test(e[0])) && typeof e[1] === 'string' && e[1] !== '',
    ),
  );
}

/**
 * A suffix for a deployment that has none in its azd environment — only where its resource group does not exist:
 * a teammate, CI or a fresh clone would otherwise make a second complete stack in the same group (a second timer
 * syncing the same tenant). The suffix lives on as a Bicep output (`azd env refresh` brings it back) and as the
 * group's tag.
 */
async function newSuffix(
  env: Record<string, string | undefined>,
  group: (() => ReturnType<ResourceGroupLookup>) | undefined,
): Promise<string> {
  const name = env.AZURE_ENV_NAME ? resourceGroupName(env.AZURE_ENV_NAME) : undefined;
  const found = group ? await group() : { exists: false as const };
  if (found.exists)
    throw new Error(
      `${name} exists already${found.suffix ? ` (its resource suffix is ${found.suffix})` : ''}, and this azd environment has no AZURE_RESOURCE_SUFFIX: a new one would provision a second stack beside it. Run \`azd env refresh\` to take the deployment's values${found.suffix ? ` (or \`azd env set AZURE_RESOURCE_SUFFIX ${found.suffix}\`)` : ''}, then provision again.`,
    );
  return randomBytes(3).toString('hex');
}

function azdSet(name: string, value: string): void {
  execFileSync('azd', ['env', 'set', name, value], { stdio: ['ignore', 'ignore', 'inherit'] });
}

if (require.main === module) {
  void (async () => {
    try {
      if (process.argv.includes('--after-down')) {
        // The next `azd up` gets new resource names (the old vault is soft-deleted under its name).
        azdSet('AZURE_RESOURCE_SUFFIX', '');
        process.stderr.write('provision: resource names will be new on the next azd up\n');
      } else if (process.argv.includes('--import-variables')) {
        const values = variablesToImport(process.env.REPOSITORY_VARIABLES, resolve(__dirname, '..', '..'));
        for (const [name, value] of Object.entries(values)) azdSet(name, value);
        // Names only: a value may be an address an operator does not want in a public log.
        process.stderr.write(
          `provision: from the repository's variables: ${Object.keys(values).join(', ') || 'none'}\n`,
        );
      } else if (process.argv.includes('--print')) {
        // Every value the hook would set, as one JSON object, without calling azd or Azure (a suffix is made anew).
        process.stdout.write(`${JSON.stringify(await provisionValues(process.env))}\n`);
      } else {
        const values = await provisionValues(process.env, {
          lookup: armResourceGroup(process.env.AZURE_SUBSCRIPTION_ID),
        });
        for (const [name, value] of Object.entries(values)) azdSet(name, value);
        // Names only: a value may be an address or an endpoint an operator does not want in a CI log.
        const restored = Object.keys(settingsToRestore(process.env));
        process.stderr.write(
          `provision: settings valid; set ${[...DERIVED, 'AZURE_RESOURCE_SUFFIX'].join(', ')}${restored.length ? `; restored from the deployment: ${restored.join(', ')}` : ''}\n`,
        );
      }
    } catch (err) {
      process.stderr.write(
        `provision: ${err instanceof ConfigError ? err.message : (err as Error).message}\nFix it with \`azd env set NAME VALUE\` (or as the message says), then run azd up again.\n`,
      );
      process.exit(1);
    }
  })();
}
