import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors';

export const DEFAULT_CLIENT_SECRET_NAME = 'tenant-client-secret';
export const DEFAULT_WEBHOOK_SECRET_NAME = 'downstream-webhook-secret';
export const DEFAULT_SYNC_SCHEDULE = '0 */15 * * * *';
export const DEFAULT_LOCAL_SECRETS_FILE = '.local/secrets.json';
export const DEFAULT_EXPORTS_MAX_CONCURRENT = 2;

export const isLoopback = (u: URL) => ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);

/** The one rule for the service's addresses: https, or http on loopback only (the sandbox and emulators). */
export const httpsOrLoopback = z.url().refine((s) => {
  const u = new URL(s);
  return u.protocol === 'https:' || (u.protocol === 'http:' && isLoopback(u));
}, 'must be an https URL (http only on localhost)');

/** A service address setting, without a trailing slash. */
const serviceUrl = httpsOrLoopback.transform((s) => s.replace(/\/+$/, ''));

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), schema.optional());

export const settingsSchema = z
  .object({
    TENANT_NAME: optional(
      z.string().regex(/^[A-Za-z0-9][\w.-]{0,99}$/, 'letters, digits, dot, dash or underscore'),
    ),
    TENANT_BASE_URL: optional(serviceUrl),
    TENANT_AUTH_URL: optional(serviceUrl),
    TENANT_CLIENT_ID: optional(z.string().min(1).max(200)),
    TENANT_CLIENT_SECRET_NAME: optional(
      z
        .string()
        .regex(/^[0-9A-Za-z-]{1,127}$/, 'Key Vault secret names are 1-127 letters, digits and dashes'),
    ),
    KEY_VAULT_URL: optional(z.url({ protocol: /^https$/ }).transform((s) => (s.endsWith('/') ? s : `${s}/`))),
    // Optional second vault for delegated sessions, so the app can write there and only read credentials.
    KEY_VAULT_SESSIONS_URL: optional(
      z.url({ protocol: /^https$/ }).transform((s) => (s.endsWith('/') ? s : `${s}/`)),
    ),
    AZURE_CLIENT_ID: optional(z.string().min(1)),
    AzureWebJobsStorage: optional(z.string().min(1)),
    // Identity-based storage (Azure): service URIs instead of a connection string.
    AzureWebJobsStorage__blobServiceUri: optional(z.url({ protocol: /^https$/ })),
    AzureWebJobsStorage__tableServiceUri: optional(z.url({ protocol: /^https$/ })),
    AzureWebJobsStorage__queueServiceUri: optional(z.url({ protocol: /^https$/ })),
    SYNC_SCHEDULE: optional(
      z.string().regex(/^(\S+\s+){5}\S+$/, 'an NCRONTAB expression with six fields (seconds first)'),
    ),
    SYNC_STREAMS: optional(z.string().regex(/^[\w-]+(,[\w-]+)*$/, 'a comma-separated list of stream names')),
    SYNC_SINKS: optional(z.string().min(1)),
    SYNC_STREAMS_FILE: optional(z.string().min(1)),
    DOWNSTREAM_WEBHOOK_URL: optional(serviceUrl),
    DOWNSTREAM_WEBHOOK_SECRET_NAME: optional(
      z
        .string()
        .regex(/^[0-9A-Za-z-]{1,127}$/, 'Key Vault secret names are 1-127 letters, digits and dashes'),
    ),
    LOCAL_SECRETS_FILE: optional(z.string().min(1)),
    EXPORTS_MAX_CONCURRENT: optional(
      z.coerce.number().int('a whole number').min(1, 'at least 1').max(50, 'at most 50'),
    ),
    // When set, POST /api/exports also needs a Standard Webhooks signature made with this secret.
    EXPORTS_REQUEST_SECRET_NAME: optional(
      z
        .string()
        .regex(/^[0-9A-Za-z-]{1,127}$/, 'Key Vault secret names are 1-127 letters, digits and dashes'),
    ),
    // Set by Core Tools and `dev` locally; in development, export callbacks may go to loopback/private hosts.
    AZURE_FUNCTIONS_ENVIRONMENT: optional(z.string()),
  })
  .superRefine((s, ctx) => {
    // A real tenant needs all four settings; none of them means the embedded sandbox.
    const tenantKeys = ['TENANT_NAME', 'TENANT_BASE_URL', 'TENANT_AUTH_URL', 'TENANT_CLIENT_ID'] as const;
    const given = tenantKeys.filter((k) => s[k] !== undefined);
    if (given.length > 0 && given.length < tenantKeys.length) {
      for (const k of tenantKeys.filter((k) => s[k] === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: [k],
          message: `required when ${given.join(', ')} ${given.length > 1 ? 'are' : 'is'} set`,
        });
      }
    }
  });

export interface TenantSettings {
  name: string;
  baseUrl: string;
  authUrl: string;
  clientId: string;
}

export interface AppConfig {
  /** Undefined: no tenant configured, the embedded sandbox is used. */
  tenant?: TenantSettings;
  clientSecretName: string;
  keyVaultUrl?: string;
  /** Where delegated refresh tokens live; defaults to `keyVaultUrl`. */
  keyVaultSessionsUrl?: string;
  azureClientId?: string;
  /** A connection string (Azurite locally), or service URIs used with the managed identity. */
  storageConnection?: string;
  storageServiceUris?: { blob?: string; table?: string; queue?: string };
  syncSchedule: string;
  syncStreams?: string[];
  syncSinks: string;
  /** A JSON file of stream definitions that add to or override the defaults. */
  syncStreamsFile?: string;
  downstreamWebhookUrl?: string;
  downstreamWebhookSecretName: string;
  localSecretsFile: string;
  /** Exports running at once for the tenant; more get 429. */
  exportsMaxConcurrent: number;
  exportsRequestSecretName?: string;
  /** AZURE_FUNCTIONS_ENVIRONMENT=Development (Core Tools, `dev`). */
  development: boolean;
}

/** Reads every setting once, naming every bad one in a single error. */
export function loadConfig(
  env: Record<string, string | undefined>,
  options: { cwd?: string } = {},
): AppConfig {
  const result = settingsSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${String(i.path[0] ?? 'settings')}: ${i.message}`));
  }
  const s = result.data;
  return {
    tenant:
      s.TENANT_NAME && s.TENANT_BASE_URL && s.TENANT_AUTH_URL && s.TENANT_CLIENT_ID
        ? {
            name: s.TENANT_NAME,
            baseUrl: s.TENANT_BASE_URL,
            authUrl: s.TENANT_AUTH_URL,
            clientId: s.TENANT_CLIENT_ID,
          }
        : undefined,
    clientSecretName: s.TENANT_CLIENT_SECRET_NAME ?? DEFAULT_CLIENT_SECRET_NAME,
    keyVaultUrl: s.KEY_VAULT_URL,
    keyVaultSessionsUrl: s.KEY_VAULT_SESSIONS_URL ?? s.KEY_VAULT_URL,
    azureClientId: s.AZURE_CLIENT_ID,
    storageConnection: s.AzureWebJobsStorage,
    storageServiceUris:
      s.AzureWebJobsStorage__blobServiceUri ||
      s.AzureWebJobsStorage__tableServiceUri ||
      s.AzureWebJobsStorage__queueServiceUri
        ? {
            blob: s.AzureWebJobsStorage__blobServiceUri,
            table: s.AzureWebJobsStorage__tableServiceUri,
            queue: s.AzureWebJobsStorage__queueServiceUri,
          }
        : undefined,
    syncSchedule: s.SYNC_SCHEDULE ?? DEFAULT_SYNC_SCHEDULE,
    syncStreams: s.SYNC_STREAMS?.split(','),
    syncSinks: s.SYNC_SINKS ?? 'blob',
    syncStreamsFile: s.SYNC_STREAMS_FILE && resolve(options.cwd ?? process.cwd(), s.SYNC_STREAMS_FILE),
    downstreamWebhookUrl: s.DOWNSTREAM_WEBHOOK_URL,
    downstreamWebhookSecretName: s.DOWNSTREAM_WEBHOOK_SECRET_NAME ?? DEFAULT_WEBHOOK_SECRET_NAME,
    localSecretsFile: resolve(
      options.cwd ?? process.cwd(),
      s.LOCAL_SECRETS_FILE ?? DEFAULT_LOCAL_SECRETS_FILE,
    ),
    exportsMaxConcurrent: s.EXPORTS_MAX_CONCURRENT ?? DEFAULT_EXPORTS_MAX_CONCURRENT,
    exportsRequestSecretName: s.EXPORTS_REQUEST_SECRET_NAME,
    development: s.AZURE_FUNCTIONS_ENVIRONMENT?.toLowerCase() === 'development',
  };
}

const localSettingsSchema = z.object({ Values: z.record(z.string(), z.string()).optional() });

/** The CLI reads `local.settings.json` like the Functions host; the environment wins over it. */
export function readLocalSettings(cwd: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(resolve(cwd, 'local.settings.json'), 'utf8');
  } catch {
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(['local.settings.json: not valid JSON'], 'local.settings.json');
  }
  const result = localSettingsSchema.safeParse(parsed);
  if (!result.success)
    throw new ConfigError(
      ['local.settings.json: "Values" must be an object of strings'],
      'local.settings.json',
    );
  return result.data.Values ?? {};
}
