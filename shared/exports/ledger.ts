import type { TableClient, TableEntityResult } from '@azure/data-tables';
import { statusOf } from '../errors';
import { lazyTable } from '../state/lazy';

/** A claimed slot whose export never started (the starter died) is free again after this. */
const UNSTARTED_SLOT_SECONDS = 120;

export interface SlotHolder {
  exportId: string;
  claimedAt: string;
}

/**
 * The tenant's running-export slots, in Table Storage (EXPORTS_MAX_CONCURRENT of them): conditional writes, so two
 * requests racing for the last slot cannot both win.
 */
export class ExportSlots {
  private readonly table: () => Promise<TableClient>;

  constructor(private readonly client: TableClient) {
    this.table = lazyTable(client);
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
