import type { GraphQLSchema } from 'graphql';
import type { AccessLayer } from '../access';
import { introspect } from '../catalog/introspect';
import { keptFor } from '../cache';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import { ConfigError, IntegrationError } from '../errors';
import { ExportLedger } from '../exports/ledger';
import type { Logger } from '../log';
import { blobService } from '../state/blob-service';
import { tableClient } from '../state/table-service';
import type { SessionMetadata } from '../state/session-metadata';
import { loadOperations, type ImportOperation } from './operations';
import type { ImportInput } from './orchestration';
import { AzureImportStore, type ImportStore } from './store';

/** The import webhook's parts, built once per process from configuration. */
export interface ImportSetup {
  tenant: string;
  operations: () => Promise<Map<string, ImportOperation>>;
  /** The tenant's schema, for the variables' types; undefined when it refuses introspection. */
  schema: () => Promise<GraphQLSchema | undefined>;
  session: () => Promise<SessionMetadata | undefined>;
  store: ImportStore;
  /** Idempotency-Keys: the export webhook's ledger, under the imports' own scope. */
  keys: ExportLedger;
  maxItems: number;
  adminWaitMs: number;
  development: boolean;
  callbackSecret: () => Promise<string>;
  clock: Clock;
  logger: Logger;
  /** An import was accepted: its run begins in the history and its trace. */
  accepted: (input: ImportInput) => Promise<void>;
}

const SCHEMA_CACHE_MS = 60_000;

export function importSetup(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'tenant' | 'graphql' | 'delegated'>,
  options: { clock: Clock; logger: Logger; accepted?: (input: ImportInput) => Promise<void> },
): ImportSetup {
  const table = tableClient(config, 'importledger');
  if (!table)
    throw new ConfigError([
      'AzureWebJobsStorage: not set (nor AzureWebJobsStorage__tableServiceUri); imports need table storage',
    ]);
  return {
    tenant: access.tenant.name,
    operations: keptFor(SCHEMA_CACHE_MS, options.clock, () => loadOperations(config.imports.operationsFile)),
    schema: keptFor(SCHEMA_CACHE_MS, options.clock, () =>
      introspect(access.graphql).catch((err: unknown) => {
        // Without introspection the document's own declarations check the variables (docs/import.md).
        if (err instanceof IntegrationError && err.code === 'introspection_refused') return undefined;
        throw err;
      }),
    ),
    session: () => access.delegated.status(),
    store: new AzureImportStore(table, blobService(config)),
    keys: ExportLedger.fromConfig(config),
    maxItems: config.imports.maxItems,
    adminWaitMs: config.imports.adminWaitMs,
    development: config.development,
    callbackSecret: () => access.secrets.get(config.downstreamWebhookSecretName),
    clock: options.clock,
    logger: options.logger,
    accepted: options.accepted ?? (async () => undefined),
  };
}
