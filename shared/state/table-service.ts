import type { TableClient } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import type { AppConfig } from '../config';
import { azureCredential } from '../secrets/credential';

/**
 * The SDK, loaded with the first table client: a command that never touches tables — the CLI's sync with local
 * state asks for the session store's table and gets none — does not pay for it (~210 modules, ~0.1 s of CPU).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = () => require('@azure/data-tables') as typeof import('@azure/data-tables');

/**
 * A table as the app sees it: Azurite's connection string locally, the service URI with the managed identity
 * in Azure (no account keys there); undefined when neither is configured.
 */
export function tableClient(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  table: string,
  credential?: TokenCredential,
): TableClient | undefined {
  if (credential) return tableClientOnUse(config, table, credential)?.();
  // One client per configuration and table, whoever asks (the ledgers, the run history, imports).
  let clients = made.get(config);
  if (!clients) made.set(config, (clients = new Map()));
  let client = clients.get(table);
  if (!client) {
    client = tableClientOnUse(config, table)?.();
    if (client) clients.set(table, client);
  }
  return client;
}

const made = new WeakMap<object, Map<string, TableClient>>();

/**
 * `tableClient` built when first asked for: a client kept for a path most runs never take (the delegated session's
 * store, which an export or a sync never reads) loads no SDK until then. Undefined when no table is configured.
 */
export function tableClientOnUse(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  table: string,
  credential?: TokenCredential,
): (() => TableClient) | undefined {
  const connection = config.storageConnection;
  if (connection)
    return () => sdk().TableClient.fromConnectionString(connection, table, { allowInsecureConnection: true });
  const url = config.storageServiceUris?.table;
  return url ? () => new (sdk().TableClient)(url, table, credential ?? azureCredential(config)) : undefined;
}
