import type { TableClient, TransactionAction } from '@azure/data-tables';
import type { BlobServiceClient } from '@azure/storage-blob';
import { z } from 'zod';
import { statusOf } from '../errors';
import { downloadWhole } from '../state/blocks';
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
  /** Commits recorded so far: the next commit's `seq`. */
  commits: number;
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
  /**
   * Records outcomes and the next window (null: none), in one write where the store allows. `seq` orders the
   * commits (from `progress().commits` up): the window is the latest commit's.
   */
  commit(id: string, seq: number, outcomes: ItemOutcome[], window: [number, number] | null): Promise<void>;
  /**
   * The first commit of an import nothing has been recorded for: its first window, in one write that fails where
   * any commit exists — so a fresh import need not read its progress first. True when this call (`attempt`, unique
   * to it) made that commit — also when a retry of its own write found it made; false when the import has one
   * already: read `progress` then.
   */
  begin(id: string, window: [number, number], attempt: string): Promise<boolean>;
}

const pad = (i: number) => String(i).padStart(7, '0');
/** Table transactions hold at most 100 operations, all in one partition. */
const TRANSACTION_OPS = 100;
/** A string property holds at most 32 K characters. */
const MAX_ROW_CHARS = 30_000;
const CODE_OF = { applied: 'a', failed: 'f', skipped: 's' } as const;
const STATE_OF = { a: 'applied', f: 'failed', s: 'skipped' } as const;
const rowSchema = z.array(
  z.tuple([z.number().int().min(0), z.enum(['a', 'f', 's'])], z.string()).refine((t) => t.length <= 4),
);

/** A commit's rows, in order: `c_{seq}_{part}`; the window is on its last part. */
const keyOf = (seq: number, part: number) => `c_${pad(seq)}_${String(part).padStart(4, '0')}`;

/** The rows one commit writes, the window on the last: the same shape for `commit` and `begin`. */
function commitRows(id: string, seq: number, outcomes: ItemOutcome[], window: [number, number] | null) {
  const partitionKey = `import_${id}`;
  // One row per commit — its outcomes and the window — split only past a property's size: Table storage's cost
  // is per entity and per request, and one entity per item made the ledger cost more than the mutations
  // (docs/benchmarks.md#import).
  const parts: string[] = [];
  let part: string[] = [];
  let chars = 0;
  for (const o of outcomes) {
    const entry = JSON.stringify(
      o.message
        ? [o.index, CODE_OF[o.state], o.code ?? '', o.message]
        : o.code
          ? [o.index, CODE_OF[o.state], o.code]
          : [o.index, CODE_OF[o.state]],
    );
    if (chars + entry.length + 1 > MAX_ROW_CHARS) {
      parts.push(`[${part.join(',')}]`);
      part = [];
      chars = 0;
    }
    part.push(entry);
    chars += entry.length + 1;
  }
  parts.push(`[${part.join(',')}]`);
  return parts.map((json, i) => ({
    partitionKey,
    rowKey: keyOf(seq, i),
    outcomes: json,
    ...(i === parts.length - 1 ? { last: true, ...(window ? { from: window[0], to: window[1] } : {}) } : {}),
  }));
}

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
    const buffer = await downloadWhole((await this.container()).getBlobClient(`${id}/items.json`));
    return JSON.parse(buffer.toString('utf8')) as ImportBatch;
  }

  async progress(id: string): Promise<ImportProgress> {
    await this.table();
    const outcomes = new Map<number, ItemOutcome>();
    let window: [number, number] | undefined;
    let commits = 0;
    let windowSeq = -1;
    for await (const row of this.client.listEntities<Record<string, unknown>>({
      queryOptions: { filter: `PartitionKey eq 'import_${id}'` },
    })) {
      const seq = /^c_(\d+)_\d+$/.exec(String(row.rowKey))?.[1];
      const parsed = rowSchema.safeParse(JSON.parse(String(row.outcomes ?? '[]')));
      if (seq === undefined || !parsed.success)
        throw new Error(`import ${id}: a row of the ledger is unreadable`);
      commits = Math.max(commits, Number(seq) + 1);
      // A commit's window is on its last row: were that row's transaction lost, the window before still holds.
      if (row.last === true && Number(seq) > windowSeq) {
        windowSeq = Number(seq);
        window = typeof row.from === 'number' && typeof row.to === 'number' ? [row.from, row.to] : undefined;
      }
      for (const [index, state, code, message] of parsed.data)
        outcomes.set(index, {
          index,
          state: STATE_OF[state],
          ...(code ? { code } : {}),
          ...(message ? { message } : {}),
        });
    }
    return { outcomes, window, commits };
  }

  async commit(
    id: string,
    seq: number,
    outcomes: ItemOutcome[],
    window: [number, number] | null,
  ): Promise<void> {
    await this.table();
    const rows = commitRows(id, seq, outcomes, window);
    if (rows.length === 1) {
      await this.client.upsertEntity(rows[0], 'Replace');
      return;
    }
    // The last row (the window) goes in the last transaction: were an earlier one to fail, the old window holds.
    for (let i = 0; i < rows.length; i += TRANSACTION_OPS)
      await this.client.submitTransaction(
        rows.slice(i, i + TRANSACTION_OPS).map((r): TransactionAction => ['upsert', r, 'Replace']),
      );
  }

  async begin(id: string, window: [number, number], attempt: string): Promise<boolean> {
    await this.table();
    // The first commit's one row (no outcomes yet), marked with the attempt that writes it.
    const [row] = commitRows(id, 0, [], window);
    try {
      await this.client.createEntity({ ...row, attempt });
      return true;
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      // The SDK retries a write whose answer was lost: the row may be this very call's.
      const found = await this.client.getEntity<{ attempt?: string }>(row.partitionKey, row.rowKey);
      return found.attempt === attempt;
    }
  }
}

/** In one process (the CLI): the same ledger in memory. */
export class MemoryImportStore implements ImportStore {
  private readonly batches = new Map<string, ImportBatch>();
  private readonly state = new Map<string, ImportProgress & { attempt?: string }>();

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
    return { outcomes: new Map(p?.outcomes), window: p?.window, commits: p?.commits ?? 0 };
  }

  async begin(id: string, window: [number, number], attempt: string): Promise<boolean> {
    const p = this.state.get(id);
    if (p) return p.attempt === attempt;
    this.state.set(id, { outcomes: new Map(), window, commits: 1, attempt });
    return true;
  }

  async commit(
    id: string,
    seq: number,
    outcomes: ItemOutcome[],
    window: [number, number] | null,
  ): Promise<void> {
    const p = this.state.get(id) ?? { outcomes: new Map<number, ItemOutcome>(), commits: 0 };
    for (const o of outcomes) p.outcomes.set(o.index, o);
    if (seq >= p.commits) {
      p.window = window ?? undefined;
      p.commits = seq + 1;
    }
    this.state.set(id, p);
  }
}
