import { dirname, join } from 'node:path';
import type { AppConfig } from '../config';
import { blobService } from '../state/blob-service';
import { BlobSyncStateStore, FileSyncStateStore, type SyncStateStore } from './state';

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
