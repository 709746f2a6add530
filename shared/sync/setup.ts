import type { AccessLayer } from '../access';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import { blobService } from '../state/blob-service';
import { resolveStreams, type StreamDefinition } from '../streams';
import { sinksFor, type ChangeSink } from './sinks';
import { BlobSyncStateStore, FileSyncStateStore, type SyncStateStore } from './state';
import { dirname, join } from 'node:path';

export interface SyncSetup {
  streams: StreamDefinition[];
  state: SyncStateStore;
  sink: ChangeSink;
  /** Streams read at once. */
  concurrency: number;
}

export const SYNC_CONCURRENCY = 3;

/**
 * The sync's parts from configuration: streams (defaults + SYNC_STREAMS_FILE, narrowed by SYNC_STREAMS),
 * state in Blob Storage when there is storage (a folder beside the secrets file otherwise), and SYNC_SINKS.
 * Any bad setting fails here, naming it.
 */
export function syncSetup(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets'>,
  options: { clock?: Clock; sinks?: string; select?: string[] } = {},
): SyncSetup {
  const hasStorage = Boolean(config.storageConnection || config.storageServiceUris?.blob);
  const service = hasStorage ? blobService(config) : undefined;
  return {
    streams: resolveStreams({ file: config.syncStreamsFile, select: options.select ?? config.syncStreams }),
    state: service
      ? new BlobSyncStateStore(service)
      : new FileSyncStateStore(join(dirname(config.localSecretsFile), 'sync-state')),
    sink: sinksFor(options.sinks ?? config.syncSinks, {
      blobService: service && (() => service),
      webhook: {
        url: config.downstreamWebhookUrl,
        secret: () => access.secrets.get(config.downstreamWebhookSecretName),
        clock: options.clock,
      },
    }),
    concurrency: SYNC_CONCURRENCY,
  };
}
