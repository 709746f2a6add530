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
 * Settings the docs name that never reach Azure through azd, each with why (test/unit/infra.test.ts holds every
 * setting the docs list to the schema or to this list). What the platform sets, what only a machine of one's own
 * uses, and what would put a secret in app settings — in Azure the app signs in with its identity, and a credential
 * lives in Key Vault under a name a setting gives.
 */
export const NOT_DEPLOYABLE: Record<string, string> = {
  AzureWebJobsStorage:
    'a connection string carries the account key: in Azure the host signs in with its identity (AzureWebJobsStorage__*, set by Bicep)',
  POSTGRES_URL: 'a URL carries a password: in Azure the app signs in with its identity (POSTGRES_HOST)',
  LOCAL_SECRETS_FILE: 'a file on a machine of your own: in Azure secrets are in Key Vault',
  AZURE_FUNCTIONS_ENVIRONMENT: 'development mode, for a machine of your own',
  WEBSITE_INSTANCE_ID: 'set by the platform',
  WEBSITE_SKU: 'set by the platform',
  WEBSITE_SITE_NAME: 'set by the platform',
  CONTAINER_NAME: 'set by the platform',
  OTEL_EXPORTER_OTLP_HEADERS:
    'usually carries an API key: put the headers in Key Vault and name the secret in OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME (the preprovision hook refuses it)',
};

/** The schema's settings among them: never passed through. */
export const NOT_IN_AZURE = Object.keys(NOT_DEPLOYABLE).filter((name) => name in APP_SETTINGS.schema.shape);

/**
 * The Functions host's own settings (host.json's values overridden by app settings, `AzureFunctionsJobHost__…`),
 * passed through as the schema's are — except the durable backend's, which DURABLE_BACKEND decides.
 */
export const HOST_SETTING = /^AzureFunctionsJobHost__/i;
const BACKEND_OWNED = /^AzureFunctionsJobHost__extensions__durableTask__(storageProvider|hubName)/i;

const fixed = new Set<string>([...BICEP_SETTINGS, ...NOT_IN_AZURE]);

/** The schema's settings an operator sets through the azd environment and main.bicep does not set itself. */
export const PASSED_THROUGH = Object.keys(APP_SETTINGS.schema.shape).filter((name) => !fixed.has(name));

/** The passed-through settings the environment holds (empty values are unset, as azd treats them). */
export function passedThroughSettings(env: Record<string, string | undefined>): Record<string, string> {
  const host = Object.keys(env).filter((name) => HOST_SETTING.test(name));
  const refused = host.filter((name) => BACKEND_OWNED.test(name) && env[name]);
  if (refused.length)
    throw new Error(
      `${refused.join(', ')}: the durable backend's settings follow DURABLE_BACKEND (docs/deploy.md); unset ${refused.length === 1 ? 'it' : 'them'} with azd env set NAME ''`,
    );
  return Object.fromEntries(
    [...PASSED_THROUGH, ...host.sort()].flatMap((name) =>
      env[name] ? [[name, env[name] as string] as const] : [],
    ),
  );
}

/** APP_SETTINGS_BASE64's value: base64 of the JSON object, or empty where there is nothing to pass. */
export function appSettingsParameter(env: Record<string, string | undefined>): string {
  const settings = passedThroughSettings(env);
  return Object.keys(settings).length ? Buffer.from(JSON.stringify(settings)).toString('base64') : '';
}

/**
 * The passed-through settings the deployment holds and this environment does not: APP_SETTINGS_BASE64 is a Bicep
 * output, so azd writes the deployed value back after each provision and `azd env refresh` brings it to a teammate's
 * machine, a fresh clone or a new CI runner — where the settings it carries are not set one by one. Each such setting
 * is restored, so the next provision deploys it again instead of dropping it. A setting the operator cleared is in the
 * environment with an empty value (`azd env set NAME ''`) and stays cleared.
 */
export function settingsToRestore(env: Record<string, string | undefined>): Record<string, string> {
  if (!env.APP_SETTINGS_BASE64) return {};
  let deployed: unknown;
  try {
    deployed = JSON.parse(Buffer.from(env.APP_SETTINGS_BASE64, 'base64').toString('utf8'));
  } catch {
    deployed = undefined;
  }
  if (
    !deployed ||
    typeof deployed !== 'object' ||
    Array.isArray(deployed) ||
    Object.values(deployed).some((v) => typeof v !== 'string')
  )
    throw new Error(
      "APP_SETTINGS_BASE64 in the azd environment is not what the preprovision hook writes: run azd env refresh to take the deployed value, or azd env set APP_SETTINGS_BASE64 ''",
    );
  const passable = new Set(PASSED_THROUGH);
  return Object.fromEntries(
    Object.entries(deployed as Record<string, string>).filter(
      ([name, value]) => (passable.has(name) || HOST_SETTING.test(name)) && value && env[name] === undefined,
    ),
  );
}

/** The variables `${NAME…}` main.parameters.json reads from the azd environment. */
export function parameterVariables(root: string): string[] {
  const text = readFileSync(join(root, 'infra', 'main.parameters.json'), 'utf8');
  return [...new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))].sort();
}

/** What only the hooks read (tools/durable-backend.ts): a switch of durable backend said to be meant. */
export const HOOK_VARIABLES = ['DURABLE_BACKEND_MIGRATE'] as const;

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
  return [...new Set([...parameterVariables(root), ...PASSED_THROUGH, ...HOOK_VARIABLES])]
    .filter((v) => !own.has(v))
    .sort();
}
