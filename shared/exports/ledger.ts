import type { TableClient, TableEntityResult } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import { createHash } from 'node:crypto';
import type { AppConfig } from '../config';
import { ConfigError, statusOf } from '../errors';
import { lazyTable } from '../state/lazy';
import { tableClient } from '../state/table-service';

/** How long an Idempotency-Key is remembered. */
export const IDEMPOTENCY_SECONDS = 24 * 3600;
/** A claimed slot whose export never started (the starter died) is free again after this. */
const UNSTARTED_SLOT_SECONDS = 120;

export interface KeyRecord {
  exportId: string;
  bodyHash: string;
  createdAt: string;
}

export interface SlotHolder {
  exportId: string;
  claimedAt: string;
}

const TABLE = 'exportledger';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * What the export webhook remembers between requests, in Table Storage: Idempotency-Keys (per caller, as
 * hashes — neither the key nor the caller's function key is stored) and the tenant's running-export slots.
 * Both use conditional writes, so two requests racing for the same key or the last slot cannot both win.
 */
export class ExportLedger {
  private readonly table: () => Promise<TableClient>;

  constructor(private readonly client: TableClient) {
    this.table = lazyTable(client);
  }

  static fromConfig(
    config: Pick<AppConfig, 'storageConnection' | 'storageServiceUris' | 'azureClientId'>,
    credential?: TokenCredential,
  ): ExportLedger {
    const client = tableClient(config, TABLE, credential);
    if (client) return new ExportLedger(client);
    throw new ConfigError([
      'AzureWebJobsStorage: not set (nor AzureWebJobsStorage__tableServiceUri); exports need table storage',
    ]);
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
      let existing: TableEntityResult<KeyRecord>;
      try {
        existing = await this.client.getEntity<KeyRecord>(partitionKey, rowKey);
      } catch (err) {
        if (statusOf(err) === 404) continue; // released meanwhile
        throw err;
      }
      if (nowMs - Date.parse(existing.createdAt) < IDEMPOTENCY_SECONDS * 1000)
        return { exportId: existing.exportId, bodyHash: existing.bodyHash, createdAt: existing.createdAt };
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

  async releaseKey(scope: string, key: string): Promise<void> {
    await this.client.deleteEntity(`key_${scope}`, sha(key)).catch((err: unknown) => {
      if (statusOf(err) !== 404) throw err;
    });
  }

  /**
   * Takes one of the tenant's `max` slots for `exportId`. A held slot is freed when `stillRunning` says its
   * export is over (or it never started within two minutes). False: all slots are busy.
   */
  async claimSlot(
    tenant: string,
    max: number,
    exportId: string,
    nowMs: number,
    stillRunning: (exportId: string) => Promise<boolean | undefined>,
  ): Promise<boolean> {
    await this.table();
    const partitionKey = `slot_${tenant}`;
    const holder: SlotHolder = { exportId, claimedAt: new Date(nowMs).toISOString() };
    // One read for the whole partition (at most `max` rows), then conditional writes only where they can win.
    const held = new Map<string, TableEntityResult<SlotHolder>>();
    for await (const slot of this.client.listEntities<SlotHolder>({
      queryOptions: { filter: `PartitionKey eq '${partitionKey}'` },
    }))
      held.set(String(slot.rowKey), slot);
    for (let i = 0; i < max; i++) {
      if (held.has(String(i))) continue;
      try {
        await this.client.createEntity({ partitionKey, rowKey: String(i), ...holder });
        return true;
      } catch (err) {
        if (statusOf(err) !== 409) throw err;
      }
    }
    for (const [rowKey, slot] of held) {
      if (Number(rowKey) >= max) continue; // a slot beyond a lowered EXPORTS_MAX_CONCURRENT
      const running = await stillRunning(slot.exportId);
      const unstarted =
        running === undefined && nowMs - Date.parse(slot.claimedAt) > UNSTARTED_SLOT_SECONDS * 1000;
      if (running === false || unstarted) {
        try {
          await this.client.updateEntity({ partitionKey, rowKey, ...holder }, 'Replace', { etag: slot.etag });
          return true;
        } catch (err) {
          if (statusOf(err) !== 412 && statusOf(err) !== 404) throw err;
        }
      }
    }
    return false;
  }

  /** Frees the slot `exportId` holds (nothing if it holds none). */
  async releaseSlot(tenant: string, exportId: string): Promise<void> {
    await this.table();
    const slots = this.client.listEntities<SlotHolder>({
      queryOptions: { filter: `PartitionKey eq 'slot_${tenant}'` },
    });
    for await (const slot of slots) {
      if (slot.exportId !== exportId) continue;
      await this.client
        .deleteEntity(`slot_${tenant}`, String(slot.rowKey), { etag: slot.etag })
        .catch((err: unknown) => {
          if (statusOf(err) !== 404 && statusOf(err) !== 412) throw err;
        });
    }
  }
}
