import type { GraphQLSchema } from 'graphql';
import type { AccessLayer } from '../access';
import { introspect } from '../catalog/introspect';
import { keptFor } from '../cache';
import type { Clock } from '../clock';
import { partOf, type AppConfig } from '../config';
import { ConfigError, IntegrationError } from '../errors';
import { IdempotencyKeys, ledgerTable } from '../state/idempotency';
import type { Logger } from '../log';
import { blobService } from '../state/blob-service';
import { tableClient } from '../state/table-service';
import type { SessionMetadata } from '../state/session-metadata';
import { loadOperations, type ImportOperation } from './operations';
import type { ImportInput } from './orchestration';
import { IMPORT_SETTINGS } from './settings';
import { AzureImportStore, type ImportBatch, type ImportStore } from './store';

/** The import webhook's parts, built once per process from configuration. */
export interface ImportParts {
  tenant: string;
  /** The allow-list; `imports_disabled` outside development without IMPORT_OPERATIONS_FILE. */
  operations: () => Promise<Map<string, ImportOperation>>;
  /** The stored batch, once its document is checked to be its operation's on the allow-list now; else it throws. */
  allowed: (batch: ImportBatch) => Promise<ImportBatch>;
  /** The tenant's schema, for the variables' types; undefined when it refuses introspection. */
  schema: () => Promise<GraphQLSchema | undefined>;
  session: () => Promise<SessionMetadata | undefined>;
  store: ImportStore;
  /** Idempotency-Keys, under the imports' own scope (`imports-…`: an export's key never answers an import). */
  keys: IdempotencyKeys;
  maxItems: number;
  adminWaitMs: number;
  /** IMPORTS_REQUEST_SECRET_NAME's secret: POST /api/imports then needs a Standard Webhooks signature made with it. */
  requestSecret?: () => Promise<string>;
  development: boolean;
  callbackSecret: () => Promise<string>;
  clock: Clock;
  logger: Logger;
  /**
   * Deletes the items and ledgers of imports that ended more than IMPORTS_RETENTION_DAYS ago, at most once an hour
   * per process; a failure is logged, never the caller's.
   */
  expireEnded: () => Promise<void>;
  /** An import was accepted: its run begins in the history and its trace. */
  accepted: (input: ImportInput) => Promise<void>;
}

const SCHEMA_CACHE_MS = 60_000;

export function importParts(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'tenant' | 'graphql' | 'delegated'>,
  options: { clock: Clock; logger: Logger; accepted?: (input: ImportInput) => Promise<void> },
): ImportParts {
  const table = tableClient(config, 'importledger');
  if (!table)
    throw new ConfigError([
      'AzureWebJobsStorage: not set (nor AzureWebJobsStorage__tableServiceUri); imports need table storage',
    ]);
  const settings = partOf(config, IMPORT_SETTINGS);
  const requestSecretName = settings.requestSecretName;
  const store = new AzureImportStore(table, blobService(config));
  let lastExpiryMs = Number.NEGATIVE_INFINITY;
  const operations = keptFor(SCHEMA_CACHE_MS, options.clock, () =>
    loadOperations(settings.operationsFile, { builtIns: config.development }),
  );
  return {
    tenant: access.tenant.name,
    operations,
    allowed: async (batch) => {
      const operation = (await operations()).get(batch.operation);
      if (operation?.document !== batch.document)
        throw new IntegrationError(
          'unknown_operation',
          `the stored import's operation ${batch.operation} is not on the allow-list as it was accepted (IMPORT_OPERATIONS_FILE changed, or the stored batch was altered): nothing of it is sent`,
        );
      return batch;
    },
    schema: keptFor(SCHEMA_CACHE_MS, options.clock, () =>
      introspect(access.graphql).catch((err: unknown) => {
        // Without introspection the document's own declarations check the variables (docs/import.md).
        if (err instanceof IntegrationError && err.code === 'introspection_refused') return undefined;
        throw err;
      }),
    ),
    session: () => access.delegated.status(),
    store,
    expireEnded: async () => {
      const now = options.clock.now();
      if (now - lastExpiryMs < 3_600_000) return;
      lastExpiryMs = now;
      try {
        const cutoff = new Date(now - settings.retentionDays * 86_400_000).toISOString();
        const count = await store.expire(cutoff);
        if (count) options.logger.log('info', 'import data expired', { count });
      } catch (err) {
        options.logger.log('warn', 'import data not expired', {
          reason: (err as Error).message.split('\n')[0],
        });
      }
    },
    keys: new IdempotencyKeys(ledgerTable(config, 'imports')),
    maxItems: settings.maxItems,
    adminWaitMs: settings.adminWaitMs,
    ...(requestSecretName ? { requestSecret: () => access.secrets.get(requestSecretName) } : {}),
    development: config.development,
    callbackSecret: () => access.secrets.get(config.downstreamWebhookSecretName),
    clock: options.clock,
    logger: options.logger,
    accepted: options.accepted ?? (async () => undefined),
  };
}
