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

/**
 * The table, created on first use (once per process; a failure is tried again next time). Given a function, the
 * client itself is built then too.
 */
export function lazyTable(table: TableClient | (() => TableClient)): () => Promise<TableClient> {
  let ready: Promise<TableClient> | undefined;
  const create = async () => {
    const client = typeof table === 'function' ? table() : table;
    await client.createTable();
    return client;
  };
  return () =>
    (ready ??= create().catch((err: unknown) => {
      ready = undefined;
      throw err;
    }));
}
