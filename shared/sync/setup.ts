import { dirname, join } from 'node:path';
import type { AccessLayer } from '../access';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { blobService } from '../state/blob-service';
import { resolveStreams, type StreamDefinition } from '../streams';
import type { SyncContext } from './run';
import { defaultSchema } from './postgres';
import { sinksFor, type SinkDeps } from './sinks';
import { BlobSyncStateStore, FileSyncStateStore } from './state';

export interface SyncSetup {
  streams: StreamDefinition[];
  /** Tenant, state, sinks, clock and logger: what every sync step is given. */
  context: SyncContext;
  /** Streams read at once. */
  concurrency: number;
}

export const SYNC_CONCURRENCY = 3;

/** What the sinks need from configuration: Blob Storage when there is any, the webhook URL and its secret. */
export function sinkDeps(
  config: AppConfig,
  secrets: Pick<AccessLayer['secrets'], 'get'>,
  clock?: Clock,
): SinkDeps {
  const hasStorage = Boolean(config.storageConnection || config.storageServiceUris?.blob);
  let pool: import('pg').Pool | undefined;
  return {
    format: config.syncFormat,
    postgres: config.postgres
      ? {
          pool: () => {
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const { postgresPool } = require('../state/postgres') as typeof import('../state/postgres');
            return (pool ??= postgresPool(config, secrets));
          },
          schema: config.postgres.schema ?? defaultSchema(config.tenant?.name ?? 'sandbox'),
          softDelete: config.postgres.softDelete,
        }
      : undefined,
    blobService: hasStorage ? () => blobService(config) : undefined,
    webhook: {
      url: config.downstreamWebhookUrl,
      secret: () => secrets.get(config.downstreamWebhookSecretName),
      clock,
    },
  };
}

/**
 * The sync's parts from configuration: streams (defaults + SYNC_STREAMS_FILE, narrowed by SYNC_STREAMS),
 * state in Blob Storage when there is storage (a folder beside the secrets file otherwise), and SYNC_SINKS.
 * Any bad setting fails here, naming it.
 */
export function syncSetup(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'tenant'>,
  options: { clock?: Clock; logger?: Logger } = {},
): SyncSetup {
  const deps = sinkDeps(config, access.secrets, options.clock);
  return {
    streams: resolveStreams({ file: config.syncStreamsFile, select: config.syncStreams }),
    context: {
      tenant: access.tenant.name,
      state: deps.blobService
        ? new BlobSyncStateStore(deps.blobService())
        : new FileSyncStateStore(join(dirname(config.localSecretsFile), 'sync-state')),
      sink: sinksFor(config.syncSinks, deps),
      clock: options.clock,
      logger: options.logger,
    },
    concurrency: SYNC_CONCURRENCY,
  };
}
