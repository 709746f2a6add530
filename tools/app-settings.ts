import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP_SETTINGS } from '../shared/app';

/**
 * Which of the app's settings reach it through azd, and how. Bicep writes the function app's whole app-settings list
 * on every `azd provision`, so a setting set anywhere else (the portal, `az functionapp config appsettings set`) is
 * gone at the next deployment. So every setting an operator may choose goes through the azd environment:
 *
 * - the ones main.bicep sets itself, from a parameter of its own or from what it deploys (BICEP_SETTINGS);
 * - the ones Azure or the platform give the app, or that mean nothing there (NOT_IN_AZURE);
 * - every other setting of the configuration schema that the azd environment holds is passed through whole: the
 *   preprovision hook puts them in APP_SETTINGS_BASE64 (base64 of a JSON object: azd substitutes parameter values
 *   into main.parameters.json's text, where a JSON object would break the file), and main.bicep adds them to the
 *   list — after which its own win.
 *
 * A new setting in the schema is then deployable without touching Bicep or the workflows (test/unit/infra.test.ts
 * checks the three lists cover the schema and BICEP_SETTINGS is what main.bicep sets).
 */
export const BICEP_SETTINGS = [
  'TENANT_NAME',
  'TENANT_BASE_URL',
  'TENANT_AUTH_URL',
  'TENANT_CLIENT_ID',
  'TENANT_CLIENT_SECRET_NAME',
  'KEY_VAULT_URL',
  'KEY_VAULT_SESSIONS_URL',
  'AZURE_CLIENT_ID',
  'SYNC_SCHEDULE',
  'SYNC_STREAMS',
  'SYNC_SINKS',
  'DOWNSTREAM_WEBHOOK_URL',
  'EXPORTS_MAX_CONCURRENT',
  'IMPORT_OPERATIONS_FILE',
  'IMPORTS_REQUEST_SECRET_NAME',
  'IMPORTS_RETENTION_DAYS',
  'SYNC_FORMAT',
  'POSTGRES_HOST',
  'POSTGRES_DATABASE',
  'POSTGRES_USER',
  'HOSTED_IN_AZURE',
  'AzureWebJobsStorage__blobServiceUri',
  'AzureWebJobsStorage__queueServiceUri',
  'AzureWebJobsStorage__tableServiceUri',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
] as const;

/**
 * Settings never passed through: what the platform sets (WEBSITE_*, CONTAINER_NAME), what only a machine of one's own
 * uses (the local secret file, development mode), and the two that would put a secret in app settings — a storage
 * connection string with its key, a PostgreSQL URL with a password: in Azure the app signs in with its identity.
 */
export const NOT_IN_AZURE = [
  'AzureWebJobsStorage',
  'POSTGRES_URL',
  'LOCAL_SECRETS_FILE',
  'AZURE_FUNCTIONS_ENVIRONMENT',
  'WEBSITE_INSTANCE_ID',
  'WEBSITE_SKU',
  'WEBSITE_SITE_NAME',
  'CONTAINER_NAME',
] as const;

const fixed = new Set<string>([...BICEP_SETTINGS, ...NOT_IN_AZURE]);

/** The schema's settings an operator sets through the azd environment and main.bicep does not set itself. */
export const PASSED_THROUGH = Object.keys(APP_SETTINGS.schema.shape).filter((name) => !fixed.has(name));

/** The passed-through settings the environment holds (empty values are unset, as azd treats them). */
export function passedThroughSettings(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    PASSED_THROUGH.flatMap((name) => (env[name] ? [[name, env[name] as string] as const] : [])),
  );
}

/** APP_SETTINGS_BASE64's value: base64 of the JSON object, or empty where there is nothing to pass. */
export function appSettingsParameter(env: Record<string, string | undefined>): string {
  const settings = passedThroughSettings(env);
  return Object.keys(settings).length ? Buffer.from(JSON.stringify(settings)).toString('base64') : '';
}

/** The variables `${NAME…}` main.parameters.json reads from the azd environment. */
export function parameterVariables(root: string): string[] {
  const text = readFileSync(join(root, 'infra', 'main.parameters.json'), 'utf8');
  return [...new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))].sort();
}

/**
 * What a deployment from GitHub takes from the repository's variables into the azd environment
 * (`provision --import-variables`, .github/workflows/azure-dev.yml): every variable the parameters file reads and
 * every setting passed through — but not the values the hook derives itself, nor those azd sets (the environment's
 * name, location and the signed-in principal come from the workflow's own login).
 */
export function importableVariables(root: string, derived: readonly string[]): string[] {
  const own = new Set([
    ...derived,
    'AZURE_ENV_NAME',
    'AZURE_LOCATION',
    'AZURE_PRINCIPAL_ID',
    'AZURE_PRINCIPAL_TYPE',
  ]);
  return [...new Set([...parameterVariables(root), ...PASSED_THROUGH])].filter((v) => !own.has(v)).sort();
}
