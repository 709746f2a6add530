import type { BlobServiceClient } from '@azure/storage-blob';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { AppConfig } from '../config';
import { statusOf } from '../errors';
import { blobService } from './blob-service';
import { downloadWhole } from './blocks';
import { lazyContainer } from './lazy';
import { localStateFolder } from './local';

/*
 * Where the tenant's catalog (shared/catalog/) is kept between runs, for every feature that reads it — the sync,
 * exports, doctor, `discover`: `{tenant}/catalog.json` in the container (or folder) the sync's state shares. Both
 * stores are the catalog's own `CatalogStore` (shared/catalog/index.ts) by their shape.
 */

const LEAF = 'catalog.json';

/** A folder (the CLI's `.local/sync-state/`). */
export class FileCatalogStore {
  constructor(readonly dir: string) {}

  private path(tenant: string) {
    return join(this.dir, encodeURIComponent(tenant), LEAF);
  }

  async readCatalog(tenant: string) {
    try {
      return await readFile(this.path(tenant), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async writeCatalog(tenant: string, json: string) {
    const path = this.path(tenant);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // Write then rename: a process killed while writing leaves the previous catalog whole.
    await writeFile(`${path}.tmp`, json, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }
}

/** Blob Storage (Azurite locally): container `sync-state`. */
export class BlobCatalogStore {
  private readonly container: ReturnType<typeof lazyContainer>;

  constructor(service: BlobServiceClient) {
    this.container = lazyContainer(service, 'sync-state');
  }

  private async blob(tenant: string) {
    return (await this.container()).getBlockBlobClient(`${encodeURIComponent(tenant)}/${LEAF}`);
  }

  async readCatalog(tenant: string) {
    try {
      return (await downloadWhole(await this.blob(tenant))).toString('utf8');
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async writeCatalog(tenant: string, json: string) {
    await (
      await this.blob(tenant)
    ).upload(json, Buffer.byteLength(json), { blobHTTPHeaders: { blobContentType: 'application/json' } });
  }
}

type Store = FileCatalogStore | BlobCatalogStore;
const stores = new WeakMap<AppConfig, Store>();

/** The catalog's store for this configuration: Blob Storage when there is storage, else the local state folder. */
export function catalogStore(config: AppConfig): Store {
  let store = stores.get(config);
  if (!store) {
    store =
      config.storageConnection || config.storageServiceUris?.blob
        ? new BlobCatalogStore(blobService(config))
        : new FileCatalogStore(localStateFolder(config));
    stores.set(config, store);
  }
  return store;
}
