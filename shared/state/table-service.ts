import type { TableClient } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import type { AppConfig } from '../config';
import { azureCredential } from '../secrets/credential';

/**
 * A table as the app sees it: Azurite's connection string locally, the service URI with the managed identity
 * in Azure (no account keys there); undefined when neither is configured.
 */
export function tableClient(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  table: string,
  credential?: TokenCredential,
): TableClient | undefined {
  // The SDK loads with the first table client: a command that never touches tables does not pay for it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { TableClient } = require('@azure/data-tables') as typeof import('@azure/data-tables');
  if (config.storageConnection)
    return TableClient.fromConnectionString(config.storageConnection, table, {
      allowInsecureConnection: true,
    });
  const url = config.storageServiceUris?.table;
  return url ? new TableClient(url, table, credential ?? azureCredential(config)) : undefined;
}
