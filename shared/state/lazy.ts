import type { TableClient } from '@azure/data-tables';
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';

/** A container, created on first use (once per process; a failure is tried again next time). */
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

/** The table, created on first use (once per process; a failure is tried again next time). */
export function lazyTable(client: TableClient): () => Promise<TableClient> {
  let ready: Promise<TableClient> | undefined;
  return () =>
    (ready ??= client.createTable().then(
      () => client,
      (err: unknown) => {
        ready = undefined;
        throw err;
      },
    ));
}
