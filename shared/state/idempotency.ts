import type { TableClient, TableEntityResult } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import { createHash } from 'node:crypto';
import type { AppConfig } from '../config';
import { ConfigError, statusOf } from '../errors';
import type { KeyClaims, KeyRecord } from '../net/accepted';
import { lazyTable } from './lazy';
import { tableClient } from './table-service';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_SECONDS = 24 * 3600;

/**
 * The table keys live in, beside the exports' slots (shared/exports/ledger.ts). Named for the exports that first kept
 * keys there: renaming it would forget every key and slot already held.
 */
export const LEDGER_TABLE = 'exportledger';

/** The ledger's table, or a configuration error naming what `need`s it. */
export function ledgerTable(
  config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
  need: string,
  credential?: TokenCredential,
): TableClient {
  const client = tableClient(config, LEDGER_TABLE, credential);
  if (client) return client;
  throw new ConfigError([
    `AzureWebJobsStorage: not set (nor AzureWebJobsStorage__tableServiceUri); ${need} need table storage`,
  ]);
}
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** A key's row: `id` names the request; rows written before imports shared the keys name it `exportId`. */
type KeyRow = Omit<KeyRecord, 'id'> & { id?: string; exportId?: string };

const recordOf = (row: KeyRow): KeyRecord => ({
  id: row.id ?? row.exportId ?? '',
  bodyHash: row.bodyHash,
  createdAt: row.createdAt,
});

/**
 * The Idempotency-Keys of the async request-reply webhooks (exports, imports), in Table Storage: per caller, as
 * hashes — neither the key nor the caller's function key is stored. Conditional writes, so two requests racing for
 * the same key cannot both win.
 */
export class IdempotencyKeys implements KeyClaims {
  private readonly table: () => Promise<TableClient>;

  constructor(private readonly client: TableClient) {
    this.table = lazyTable(client);
  }

  /**
   * Remembers `key` for `scope` (the caller) as naming `record`, unless it is already remembered (and not
   * older than 24 h): then the existing record is returned and nothing changes.
   */
  async claimKey(
    scope: string,
    key: string,
    record: KeyRecord,
    nowMs: number,
  ): Promise<KeyRecord | 'claimed'> {
    await this.table();
    const partitionKey = `key_${scope}`;
    const rowKey = sha(key);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.client.createEntity({ partitionKey, rowKey, ...record });
        return 'claimed';
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
      }
      let existing: TableEntityResult<KeyRow>;
      try {
        existing = await this.client.getEntity<KeyRow>(partitionKey, rowKey);
      } catch (err) {
        if (statusOf(err) === 404) continue; // released meanwhile
        throw err;
      }
      if (nowMs - Date.parse(existing.createdAt) < IDEMPOTENCY_SECONDS * 1000) return recordOf(existing);
      // Expired: take it over, unless someone else just did.
      try {
        await this.client.updateEntity({ partitionKey, rowKey, ...record }, 'Replace', {
          etag: existing.etag,
        });
        return 'claimed';
      } catch (err) {
        if (statusOf(err) !== 412) throw err;
      }
    }
    throw new Error('the Idempotency-Key is being claimed by concurrent requests; retry');
  }

  async findKey(scope: string, key: string, nowMs: number): Promise<KeyRecord | undefined> {
    await this.table();
    let existing: TableEntityResult<KeyRow>;
    try {
      existing = await this.client.getEntity<KeyRow>(`key_${scope}`, sha(key));
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
    if (nowMs - Date.parse(existing.createdAt) >= IDEMPOTENCY_SECONDS * 1000) return undefined;
    return recordOf(existing);
  }

  async reclaimKey(
    scope: string,
    key: string,
    record: KeyRecord,
    stale: KeyRecord,
  ): Promise<KeyRecord | 'claimed'> {
    await this.table();
    const partitionKey = `key_${scope}`;
    const rowKey = sha(key);
    let existing: TableEntityResult<KeyRow>;
    try {
      existing = await this.client.getEntity<KeyRow>(partitionKey, rowKey);
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      // Released meanwhile: a plain claim.
      return this.claimKey(scope, key, record, Date.parse(record.createdAt));
    }
    const current = recordOf(existing);
    if (current.id !== stale.id || current.createdAt !== stale.createdAt) return current;
    try {
      // Only the row as it was read: two requests taking over the same stale claim cannot both win.
      await this.client.updateEntity({ partitionKey, rowKey, ...record }, 'Replace', { etag: existing.etag });
      return 'claimed';
    } catch (err) {
      if (statusOf(err) !== 412) throw err;
      return recordOf(await this.client.getEntity<KeyRow>(partitionKey, rowKey));
    }
  }

  async releaseKey(scope: string, key: string): Promise<void> {
    await this.client.deleteEntity(`key_${scope}`, sha(key)).catch((err: unknown) => {
      if (statusOf(err) !== 404) throw err;
    });
  }
}
