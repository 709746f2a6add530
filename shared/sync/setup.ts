import { dirname, join } from 'node:path';
import type { AccessLayer } from '../access';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { createSink, tracedSink } from '../sinks';
import { blobService } from '../state/blob-service';
import { resolveStreams, type StreamDefinition } from '../streams';
import type { SyncContext } from './run';
import { BlobSyncStateStore, FileSyncStateStore, type SyncStateStore } from './state';

export interface SyncSetup {
  streams: StreamDefinition[];
  /** Tenant, state, sinks, clock and logger: what every sync step is given. */
  context: SyncContext;
  /** Streams read at once. */
  concurrency: number;
}

export const SYNC_CONCURRENCY = 3;

const stores = new WeakMap<AppConfig, SyncStateStore>();

/**
 * Where the sync keeps its state: Blob Storage when there is storage, else a folder beside the secrets file. One
 * per configuration (the starters and the sync share it), built without reading streams or sinks: a bad streams
 * file must fail the run that reads it, not the start.
 */
export function syncStateStore(config: AppConfig): SyncStateStore {
  let store = stores.get(config);
  if (!store) {
    const hasStorage = Boolean(config.storageConnection || config.storageServiceUris?.blob);
    store = hasStorage
      ? new BlobSyncStateStore(blobService(config))
      : new FileSyncStateStore(join(dirname(config.localSecretsFile), 'sync-state'));
    stores.set(config, store);
  }
  return store;
}

/**
 * The sync's parts from configuration: streams (defaults + SYNC_STREAMS_FILE, narrowed by SYNC_STREAMS),
 * state in Blob Storage when there is storage (a folder beside the secrets file otherwise), and SYNC_SINKS
 * (already checked when the configuration was read). Any bad setting fails here, naming it.
 */
export function syncSetup(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'tenant'>,
  options: { clock?: Clock; logger?: Logger } = {},
): SyncSetup {
  return {
    streams: resolveStreams({ file: config.syncStreamsFile, select: config.syncStreams }),
    context: {
      tenant: access.tenant.name,
      state: syncStateStore(config),
      sink: tracedSink(
        createSink(config.syncSinks, { config, secrets: access.secrets, clock: options.clock }),
      ),
      clock: options.clock,
      logger: options.logger,
    },
    concurrency: SYNC_CONCURRENCY,
  };
}
