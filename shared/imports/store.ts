import type { TableClient, TransactionAction } from '@azure/data-tables';
import type { BlobServiceClient } from '@azure/storage-blob';
import { z } from 'zod';
import { lazyContainer, lazyTable } from '../state/lazy';
import type { ImportItem } from './request';

/** What became of one item. `pending`: not sent yet; `skipped`: never sent, the import ended first. */
export const ITEM_STATES = ['pending', 'applied', 'failed', 'skipped'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

export const itemOutcomeSchema = z.object({
  index: z.number().int().min(0),
  state: z.enum(['applied', 'failed', 'skipped']),
  /** For a failure: our error code and the tenant's (or our) message. */
  code: z.string().optional(),
  message: z.string().optional(),
});
export type ItemOutcome = z.infer<typeof itemOutcomeSchema>;

/** What an import applies: the operation's document as accepted, and the items (never in durable history). */
export interface ImportBatch {
  operation: string;
  document: string;
  items: ImportItem[];
}

export interface ImportProgress {
  outcomes: Map<number, ItemOutcome>;
  /** Items that may be on their way to the tenant: `[from, to)`, recorded before any of them is sent. */
  window?: [number, number];
}

/**
 * The per-item ledger: an item's outcome is recorded before the item is counted as done, and the window of items
 * about to be sent is recorded before any of them is — so a restarted host or a replayed activity never sends an
 * item twice (an item of the window without an outcome is reported `outcome_unknown`, never sent again).
 */
export interface ImportStore {
  saveBatch(id: string, batch: ImportBatch): Promise<void>;
  batch(id: string): Promise<ImportBatch>;
  progress(id: string): Promise<ImportProgress>;
  /** Records outcomes and the next window (null: none) in one write where the store allows. */
  commit(id: string, outcomes: ItemOutcome[], window: [number, number] | null): Promise<void>;
}

const pad = (i: number) => String(i).padStart(7, '0');
const status = (err: unknown) => (err as { statusCode?: number }).statusCode;
/** Table transactions hold at most 100 operations, all in one partition. */
const TRANSACTION_OPS = 100;
/** A string property holds at most 32 K characters. */
const MAX_ROW_CHARS = 30_000;
const CODE_OF = { applied: 'a', failed: 'f', skipped: 's' } as const;
const STATE_OF = { a: 'applied', f: 'failed', s: 'skipped' } as const;
const rowSchema = z.array(
  z.tuple([z.number().int().min(0), z.enum(['a', 'f', 's'])], z.string()).refine((t) => t.length <= 4),
);

/** The app's store: the batch as a blob (`imports/{id}/items.json`), outcomes and the window in Table storage. */
export class AzureImportStore implements ImportStore {
  private readonly table: () => Promise<TableClient>;
  private readonly container: ReturnType<typeof lazyContainer>;

  constructor(
    private readonly client: TableClient,
    blobs: BlobServiceClient,
  ) {
    this.table = lazyTable(client);
    this.container = lazyContainer(blobs, 'imports');
  }

  async saveBatch(id: string, batch: ImportBatch): Promise<void> {
    const body = JSON.stringify(batch);
    await (
      await this.container()
    )
      .getBlockBlobClient(`${id}/items.json`)
      .upload(body, Buffer.byteLength(body), { blobHTTPHeaders: { blobContentType: 'application/json' } });
  }

  async batch(id: string): Promise<ImportBatch> {
    const buffer = await (await this.container()).getBlockBlobClient(`${id}/items.json`).downloadToBuffer();
    return JSON.parse(buffer.toString('utf8')) as ImportBatch;
  }

  async progress(id: string): Promise<ImportProgress> {
    await this.table();
    const outcomes = new Map<number, ItemOutcome>();
    let window: [number, number] | undefined;
    for await (const row of this.client.listEntities<Record<string, unknown>>({
      queryOptions: { filter: `PartitionKey eq 'import_${id}'` },
    })) {
      if (row.rowKey === 'window') {
        if (typeof row.from === 'number' && typeof row.to === 'number') window = [row.from, row.to];
        continue;
      }
      const parsed = rowSchema.safeParse(JSON.parse(String(row.outcomes ?? '[]')));
      if (!parsed.success) throw new Error(`import ${id}: an outcome row of the ledger is unreadable`);
      for (const [index, state, code, message] of parsed.data)
        outcomes.set(index, {
          index,
          state: STATE_OF[state],
          ...(code ? { code } : {}),
          ...(message ? { message } : {}),
        });
    }
    return { outcomes, window };
  }

  async commit(id: string, outcomes: ItemOutcome[], window: [number, number] | null): Promise<void> {
    await this.table();
    const partitionKey = `import_${id}`;
    // Outcomes go in rows of many (a row per write, split only past a property's size): Table storage's cost is
    // per entity, and one entity per item made the ledger cost more than the mutations (docs/benchmarks.md).
    const rows: TransactionAction[] = [];
    let part: Array<[number, string, string?, string?]> = [];
    let chars = 0;
    const flush = () => {
      if (!part.length) return;
      const indexes = part.map((o) => o[0]);
      rows.push([
        'upsert',
        {
          partitionKey,
          rowKey: `out_${pad(Math.min(...indexes))}_${pad(Math.max(...indexes))}_${part.length}`,
          outcomes: JSON.stringify(part),
        },
        'Replace',
      ]);
      part = [];
      chars = 0;
    };
    for (const o of outcomes) {
      const entry: [number, string, string?, string?] = o.message
        ? [o.index, CODE_OF[o.state], o.code ?? '', o.message]
        : o.code
          ? [o.index, CODE_OF[o.state], o.code]
          : [o.index, CODE_OF[o.state]];
      const size = JSON.stringify(entry).length + 1;
      if (chars + size > MAX_ROW_CHARS) flush();
      part.push(entry);
      chars += size;
    }
    flush();
    // The window goes in the last transaction: were an earlier one to fail, the old window still covers it.
    const last: TransactionAction = window
      ? ['upsert', { partitionKey, rowKey: 'window', from: window[0], to: window[1] }, 'Replace']
      : ['delete', { partitionKey, rowKey: 'window' }];
    const all = [...rows, last];
    for (let i = 0; i < all.length; i += TRANSACTION_OPS) {
      const chunk = all.slice(i, i + TRANSACTION_OPS);
      try {
        await this.client.submitTransaction(chunk);
      } catch (err) {
        // Deleting a window that is not there fails the whole transaction: send the rest without it.
        const withoutDelete = chunk.filter((a) => a[0] !== 'delete');
        if (status(err) !== 404 || withoutDelete.length === chunk.length) throw err;
        if (withoutDelete.length) await this.client.submitTransaction(withoutDelete);
      }
    }
  }
}

/** In one process (the CLI): the same ledger in memory. */
export class MemoryImportStore implements ImportStore {
  private readonly batches = new Map<string, ImportBatch>();
  private readonly state = new Map<string, ImportProgress>();

  async saveBatch(id: string, batch: ImportBatch): Promise<void> {
    this.batches.set(id, batch);
  }

  async batch(id: string): Promise<ImportBatch> {
    const b = this.batches.get(id);
    if (!b) throw new Error(`no import ${id}`);
    return b;
  }

  async progress(id: string): Promise<ImportProgress> {
    const p = this.state.get(id);
    return { outcomes: new Map(p?.outcomes), window: p?.window };
  }

  async commit(id: string, outcomes: ItemOutcome[], window: [number, number] | null): Promise<void> {
    const p = this.state.get(id) ?? { outcomes: new Map<number, ItemOutcome>() };
    for (const o of outcomes) p.outcomes.set(o.index, o);
    p.window = window ?? undefined;
    this.state.set(id, p);
  }
}
