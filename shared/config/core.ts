import { resolve } from 'node:path';
import { z } from 'zod';
import { hostingOf, isHosted } from './hosting';
import { httpsOrLoopback, optional, secretName, serviceUrl } from './schema';

export const DEFAULT_CLIENT_SECRET_NAME = 'tenant-client-secret';
export const DEFAULT_WEBHOOK_SECRET_NAME = 'downstream-webhook-secret';
export const DEFAULT_LOCAL_SECRETS_FILE = '.local/secrets.json';
/** ACTIVITY_SLICE_SECONDS by default: four minutes an activity. */
export const DEFAULT_SLICE_SECONDS = 240;

/** The reference's sections for the core settings; a part with settings of its own declares its section. */
export const CORE_GROUPS: ReadonlyArray<{ id: string; title: string }> = [
  { id: 'tenant', title: 'The tenant (all four or none: none means the embedded sandbox)' },
  { id: 'secret-name', title: 'Names of secrets (the values live only in the secret store)' },
  { id: 'store', title: 'Secret store' },
  { id: 'azure', title: 'Azure and the Functions host' },
  { id: 'telemetry', title: 'Telemetry (OpenTelemetry traces and logs)' },
];

/** What the Azure SDKs accept: the emulator shortcut, or `name=value;…` with an account and key, or endpoints. */
function storageConnectionString(text: string): boolean {
  if (/^\s*UseDevelopmentStorage=true\s*;?\s*$/i.test(text)) return true;
  const pairs = text.split(';').filter((p) => p.trim());
  if (!pairs.length || pairs.some((p) => !/^\s*\w+\s*=./.test(p))) return false;
  const keys = new Set(pairs.map((p) => p.slice(0, p.indexOf('=')).trim().toLowerCase()));
  return (
    (keys.has('accountname') && keys.has('accountkey')) ||
    keys.has('blobendpoint') ||
    keys.has('sharedaccesssignature')
  );
}

/**
 * The settings every part of the app reads: the tenant, the secret store, storage, the host, telemetry. A feature's,
 * a sink's and the catalog's settings are declared where they are used (shared/config/part.ts) and composed with
 * these by the loader (shared/settings.ts): this floor names no feature and no sink.
 */
export const coreSettings = z.object({
  TENANT_NAME: optional(
    z.string().regex(/^[A-Za-z0-9][\w.-]{0,99}$/, 'letters, digits, dot, dash or underscore'),
  ).meta({
    description: 'The tenant (realm) name; `tenant { name }` answers it.',
    default: 'the sandbox tenant (`acme`)',
    usedBy: 'auth, GraphQL, every run',
    group: 'tenant',
  }),
  TENANT_BASE_URL: optional(serviceUrl).meta({
    description: '`{base_url}`: GraphQL at `{base_url}/graphql`. https (http only on loopback).',
    default: 'the sandbox',
    usedBy: 'GraphQL',
    group: 'tenant',
  }),
  TENANT_AUTH_URL: optional(serviceUrl).meta({
    description: '`{auth_url}`: the identity provider (token, device and discovery endpoints).',
    default: 'the sandbox',
    usedBy: 'auth',
    group: 'tenant',
  }),
  TENANT_CLIENT_ID: optional(z.string().min(1).max(200)).meta({
    description: "The M2M credential's client_id (API Credentials page).",
    default: 'the sandbox demo credential',
    usedBy: 'auth',
    group: 'tenant',
  }),
  TENANT_CLIENT_SECRET_NAME: optional(secretName).meta({
    description: 'Name of the secret-store entry that holds the client secret.',
    default: '`tenant-client-secret`',
    usedBy: 'auth',
    group: 'secret-name',
  }),
  KEY_VAULT_URL: optional(
    z.url({ protocol: /^https$/ }).transform((s) => (s.endsWith('/') ? s : `${s}/`)),
  ).meta({
    description: 'Key Vault for client secrets (https). Unset: the development secret file.',
    default: 'unset',
    usedBy: 'secrets',
    group: 'store',
  }),
  // Optional second vault for delegated sessions, so the app can write there and only read credentials.
  KEY_VAULT_SESSIONS_URL: optional(
    z.url({ protocol: /^https$/ }).transform((s) => (s.endsWith('/') ? s : `${s}/`)),
  ).meta({
    description:
      'Key Vault for delegated refresh tokens and device codes, so the app may write there and only read credentials.',
    default: '`KEY_VAULT_URL`',
    usedBy: 'the admin’s session',
    group: 'store',
  }),
  AZURE_CLIENT_ID: optional(z.string().min(1)).meta({
    description: 'Client id of the user-assigned managed identity.',
    default: 'unset: the default credential chain',
    usedBy: 'Key Vault, storage',
    group: 'azure',
  }),
  AzureWebJobsStorage: optional(
    z
      .string()
      .min(1)
      .refine(
        storageConnectionString,
        'not a storage connection string: UseDevelopmentStorage=true, or name=value pairs with AccountName and AccountKey (or a BlobEndpoint)',
      ),
  ).meta({
    description: 'Storage connection string: host, durable state, checkpoints, files (Azurite locally).',
    default: 'Azurite (local stack)',
    usedBy: 'host, state, runs',
    group: 'azure',
  }),
  // Identity-based storage (Azure): service URIs instead of a connection string.
  AzureWebJobsStorage__blobServiceUri: optional(z.url({ protocol: /^https$/ })).meta({
    description: 'Identity-based storage in Azure: the blob service URI.',
    default: 'unset',
    usedBy: 'state, sinks, files',
    group: 'azure',
  }),
  AzureWebJobsStorage__tableServiceUri: optional(z.url({ protocol: /^https$/ })).meta({
    description: 'Identity-based storage in Azure: the table service URI.',
    default: 'unset',
    usedBy: 'durable state, ledgers, run history',
    group: 'azure',
  }),
  AzureWebJobsStorage__queueServiceUri: optional(z.url({ protocol: /^https$/ })).meta({
    description: 'Identity-based storage in Azure: the queue service URI.',
    default: 'unset',
    usedBy: 'host, durable',
    group: 'azure',
  }),
  DOWNSTREAM_WEBHOOK_SECRET_NAME: optional(secretName).meta({
    description:
      'Name of the secret holding the Standard Webhooks signing key: the `webhook` sink’s messages and every callback.',
    default: '`downstream-webhook-secret`',
    usedBy: 'webhook sink, callbacks',
    group: 'secret-name',
  }),
  LOCAL_SECRETS_FILE: optional(z.string().min(1)).meta({
    description: 'The development secret file (used when `KEY_VAULT_URL` is unset).',
    default: '`.local/secrets.json`',
    usedBy: 'secrets',
    group: 'store',
  }),
  ACTIVITY_SLICE_SECONDS: optional(
    z.coerce.number().int('a whole number').min(1, 'at least 1').max(1500, 'at most 1500 (25 minutes)'),
  ).meta({
    description:
      'The longest one activity of a run works before the next resumes from its cursor (1–1500): well inside host.json’s 30-minute functionTimeout and Flex Consumption’s 60-minute scale-in drain.',
    default: '`240`',
    usedBy: 'every run',
    group: 'azure',
  }),
  RUN_HISTORY_DAYS: optional(
    z.coerce.number().int('a whole number').min(1, 'at least 1').max(365, 'at most 365'),
  ).meta({
    description: 'How many days of run summaries (of every kind) the app keeps; it purges older ones itself.',
    default: '`30`',
    usedBy: 'run history, status page',
    group: 'azure',
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(httpsOrLoopback).meta({
    description:
      'An OTLP/HTTP endpoint (the OpenTelemetry standard setting) that receives every run’s trace and the app’s log records; `OTEL_EXPORTER_OTLP_HEADERS` adds headers. https, or http on loopback.',
    default: 'unset: no OTLP export',
    usedBy: 'telemetry',
    group: 'telemetry',
  }),
  OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME: optional(secretName).meta({
    description:
      'The secret (Key Vault in Azure, the local secret file in development) that holds the OTLP endpoint’s headers, in `OTEL_EXPORTER_OTLP_HEADERS`’s form (`name=value,…`, values percent-encoded): a collector’s API key stays out of app settings. Read before each export, through the secret cache.',
    default: 'unset: no headers from the secret store',
    usedBy: 'telemetry',
    group: 'telemetry',
  }),
  OTEL_SERVICE_NAME: optional(z.string().min(1).max(100)).meta({
    description: 'The `service.name` the traces and logs carry.',
    default: '`tenant-integrations`',
    usedBy: 'telemetry',
    group: 'telemetry',
  }),
  APPLICATIONINSIGHTS_CONNECTION_STRING: optional(
    z.string().regex(/(^|;)\s*InstrumentationKey=/i, 'an Application Insights connection string'),
  ).meta({
    description:
      'Application Insights (Azure sets it): traces and logs go there through OpenTelemetry, signed in with the app’s identity.',
    default: 'unset: no Application Insights export',
    usedBy: 'telemetry',
    group: 'telemetry',
  }),
  // Set by the platform: how the app knows it runs in Azure, as the Functions host itself tells its SKUs apart.
  WEBSITE_INSTANCE_ID: optional(z.string()).meta({
    description:
      'Set by Azure on App Service instances (never set it yourself): one of the signs that the app runs in Azure (`HOSTED_IN_AZURE`).',
    default: 'unset outside Azure',
    usedBy: 'folder sinks, logging',
    group: 'azure',
  }),
  WEBSITE_SKU: optional(z.string()).meta({
    description:
      'Set by Azure (`FlexConsumption` on Flex Consumption; never set it yourself): one of the signs that the app runs in Azure.',
    default: 'unset outside Azure',
    usedBy: 'folder sinks, logging',
    group: 'azure',
  }),
  CONTAINER_NAME: optional(z.string()).meta({
    description:
      'Set by Azure on Linux Consumption and Flex instances (never set it yourself): with `WEBSITE_SITE_NAME`, a sign that the app runs in Azure (alone it is not: containers elsewhere set it too).',
    default: 'unset outside Azure',
    usedBy: 'folder sinks, logging',
    group: 'azure',
  }),
  WEBSITE_SITE_NAME: optional(z.string()).meta({
    description: 'Set by Azure: the app’s name (never set it yourself).',
    default: 'unset outside Azure',
    usedBy: 'logging',
    group: 'azure',
  }),
  HOSTED_IN_AZURE: optional(z.enum(['true', 'false'], { error: '`true` or `false`' })).meta({
    description:
      'Whether the app runs in Azure, said outright (the infra sets `true`); unset: told from `WEBSITE_SKU`, `CONTAINER_NAME` or `WEBSITE_INSTANCE_ID`. In Azure outside Development, folder sinks are refused and logs go to Application Insights only (no stderr copy the host would ingest again).',
    default: 'unset: from the platform’s own settings',
    usedBy: 'folder sinks, logging, doctor',
    group: 'azure',
  }),
  // Set by Core Tools and `dev` locally; in development, callbacks may go to loopback/private hosts.
  AZURE_FUNCTIONS_ENVIRONMENT: optional(z.string()).meta({
    description: '`Development` (Core Tools, `dev`) lets callbacks reach loopback and private hosts.',
    default: 'unset (production rules)',
    usedBy: 'callbacks',
    group: 'azure',
  }),
});
export type CoreSettings = z.output<typeof coreSettings>;

/** The checks across core settings, as issues of the composed schema's superRefine (shared/settings.ts). */
export function refineCore(s: CoreSettings, ctx: z.RefinementCtx): void {
  if (s.OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME && !s.OTEL_EXPORTER_OTLP_ENDPOINT)
    ctx.addIssue({
      code: 'custom',
      path: ['OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME'],
      message: 'headers for no endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT too, or unset it',
    });
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
}

export interface TelemetrySettings {
  otlpEndpoint?: string;
  /** The secret that holds the OTLP endpoint's headers (OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME). */
  otlpHeadersSecretName?: string;
  appInsightsConnectionString?: string;
  serviceName: string;
  /** The app's folder, whose package.json gives `service.version`. */
  appDir: string;
}

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
  /** SYNC_SINKS, parsed and checked by the sinks' registry (default: blob). */
  sinkSpecs: SinkSpec[];
  /**
   * Each sink's own settings, as its module read them (shared/sinks/), by the sink's kind; a sink that is not
   * configured has none. Only that module reads its entry.
   */
  sinks: Readonly<Record<string, unknown>>;
  /** The secret that signs what the app sends: the webhook sink's messages, every callback. */
  downstreamWebhookSecretName: string;
  localSecretsFile: string;
  /** Days of run summaries kept. */
  runHistoryDays: number;
  /** ACTIVITY_SLICE_SECONDS: the longest one activity of a run works before handing back. */
  activitySliceSeconds: number;
  /** AZURE_FUNCTIONS_ENVIRONMENT=Development (Core Tools, `dev`). */
  development: boolean;
  /** Running in Azure outside Development (`hostingOf`): no local folders to write to, no stderr copy of logs. */
  hosted: boolean;
  /** Where the app runs and what said so (doctor shows it). */
  hosting: { azure: boolean; because: string };
  telemetry: TelemetrySettings;
  /**
   * Each part's settings as it read them (shared/config/part.ts), by the part's name: the features', the catalog's,
   * what every sink reads. Only the code that declares a part reads it (`partOf`).
   */
  parts: Readonly<Record<string, unknown>>;
}

/** A SYNC_SINKS entry: `kind` or `kind:argument` (shared/sinks/ parses and checks them). */
export interface SinkSpec {
  kind: string;
  argument?: string;
}

/**
 * The configuration from settings parsed and checked (by the loader, shared/settings.ts, which also has each sink
 * read its own): `sinks` are the sinks' parts, as they read them.
 */
export function configOf(
  s: CoreSettings,
  sinks: { sinkSpecs: SinkSpec[]; sinks: Readonly<Record<string, unknown>> },
  options: { cwd?: string; parts?: Readonly<Record<string, unknown>> } = {},
): AppConfig {
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
    sinkSpecs: sinks.sinkSpecs,
    sinks: sinks.sinks,
    downstreamWebhookSecretName: s.DOWNSTREAM_WEBHOOK_SECRET_NAME ?? DEFAULT_WEBHOOK_SECRET_NAME,
    localSecretsFile: resolve(
      options.cwd ?? process.cwd(),
      s.LOCAL_SECRETS_FILE ?? DEFAULT_LOCAL_SECRETS_FILE,
    ),
    runHistoryDays: s.RUN_HISTORY_DAYS ?? 30,
    activitySliceSeconds: s.ACTIVITY_SLICE_SECONDS ?? DEFAULT_SLICE_SECONDS,
    development: s.AZURE_FUNCTIONS_ENVIRONMENT?.toLowerCase() === 'development',
    hosted: isHosted(s),
    hosting: hostingOf(s),
    telemetry: {
      otlpEndpoint: s.OTEL_EXPORTER_OTLP_ENDPOINT,
      otlpHeadersSecretName: s.OTEL_EXPORTER_OTLP_HEADERS_SECRET_NAME,
      appInsightsConnectionString: s.APPLICATIONINSIGHTS_CONNECTION_STRING,
      serviceName: s.OTEL_SERVICE_NAME ?? 'tenant-integrations',
      appDir: options.cwd ?? process.cwd(),
    },
    parts: options.parts ?? {},
  };
}
