import type { AppConfig } from '../config';
import { blobService } from '../state/blob-service';
import { localStateFolder } from '../state/local';
import { BlobSyncStateStore } from './blob-state';
import { FileSyncStateStore } from './file-state';
import type { SyncStateStore } from './sync-state';

const stores = new WeakMap<AppConfig, SyncStateStore>();

/**
 * Where the sync keeps its state: Blob Storage when there is storage, else the local state folder. One per
 * configuration (the starters and the sync share it), built without reading streams or sinks: a bad streams file
 * must fail the run that reads it, not the start.
 */
export function syncStateStore(config: AppConfig): SyncStateStore {
  let store = stores.get(config);
  if (!store) {
    const hasStorage = Boolean(config.storageConnection || config.storageServiceUris?.blob);
    store = hasStorage
      ? new BlobSyncStateStore(blobService(config))
      : new FileSyncStateStore(localStateFolder(config));
    stores.set(config, store);
  }
  return store;
}
