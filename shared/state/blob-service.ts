import type { TokenCredential } from '@azure/identity';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import type { AppConfig } from '../config';
import { ConfigError } from '../errors';
import { azureCredential } from '../secrets';

/**
 * Blob Storage as the app sees it: Azurite's connection string locally, the service URI with the managed
 * identity in Azure (no account keys there).
 */
export function blobService(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  credential?: TokenCredential,
): BlobServiceClient {
  if (config.storageConnection) return BlobServiceClient.fromConnectionString(config.storageConnection);
  const url = config.storageServiceUris?.blob;
  if (url) return new BlobServiceClient(url, credential ?? azureCredential(config));
  throw new ConfigError([
    'AzureWebJobsStorage: not set (nor AzureWebJobsStorage__blobServiceUri); blob storage is needed for sync state and exports',
  ]);
}

/** A container, created on first use (once per process). */
export function lazyContainer(service: BlobServiceClient, name: string): () => Promise<ContainerClient> {
  let ready: Promise<ContainerClient> | undefined;
  return () =>
    (ready ??= (async () => {
      const container = service.getContainerClient(name);
      await container.createIfNotExists();
      return container;
    })().catch((err: unknown) => {
      ready = undefined;
      throw err;
    }));
}
