import { createHash } from 'node:crypto';
import type { TableClient, TransactionAction } from '@azure/data-tables';
import type { BlobServiceClient } from '@azure/storage-blob';
import { z } from 'zod';
import { IntegrationError, statusOf, storedErrorCode } from '../errors';
import { errorCodeSchema } from '../errors/code-schema';
import { downloadWhole } from '../state/blocks';
import { lazyContainer, lazyTable } from '../state/lazy';
import type { ImportItem } from './request';

/**
 * What became of one item (docs/import.md, "What 'exactly once' means here"). `pending`: not sent yet; `applied`:
 * the tenant said so; `failed`: the tenant refused it, so it was not applied; `outcome_unknown`: sent, and its answer
 * lost — it may or may not have been applied, and is never sent again; `skipped`: never sent, the import ended first.
 */
export const ITEM_STATES = ['pending', 'applied', 'failed', 'outcome_unknown', 'skipped'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

export const itemOutcomeSchema = z.object({
  index: z.number().int().min(0),
  state: z.enum(['applied', 'failed', 'outcome_unknown', 'skipped']),
  /** For a failure: our error code and the tenant's (or our) message. */
  code: errorCodeSchema.optional(),
  message: z.string().optional(),
});
export type ItemOutcome = z.infer<typeof itemOutcomeSchema>;

/** What an import applies: the operation's document as accepted, and the items (never in durable history). */
export interface ImportBatch {
  operation: string;
  document: string;
  items: ImportItem[];
}

/**
 * What a batch was when accepted: the sha256 of the text stored (`items.json` is this JSON text). The import's input
 * keeps it, so the apply step refuses a stored batch whose items changed since — it would send them with the admin's
 * session — as it refuses a document no longer on the allow-list.
 */
export const batchDigest = (batch: ImportBatch) =>
  createHash('sha256').update(JSON.stringify(batch)).digest('hex');

export interface ImportProgress {
  outcomes: Map<number, ItemOutcome>;
  /** Items that may be on their way to the tenant: `[from, to)`, recorded before any of them is sent. */
  window?: [number, number];
  /** Commits recorded so far: the next commit's `seq`. */
  commits: number;
}

/**
 * Another run of the apply step made the commit this one was about to (the same `seq`): it holds the import now, and
 * this one must send nothing more. What it had in flight is in a window the other run reads as `outcome_unknown`.
 */
export class LedgerFenced extends IntegrationError {
  constructor(id: string, seq: number) {
    super(
      'unexpected',
      `import ${id}: commit ${seq} was made by another run of the apply step; this one stops`,
    );
  }
}

/**
 * The per-item ledger: an item's outcome is recorded before the item is counted as done, and the window of items
 * about to be sent is recorded before any of them is — so a restarted host or a replayed activity never sends an
 * item twice (an item of the window without an outcome is reported `outcome_unknown`, never sent again). Each commit
 * is written only where none of its `seq` exists (an insert, not an upsert): two runs of the apply step for one
 * import cannot both commit a window, so they never both send an item.
 */
export interface ImportStore {
  saveBatch(id: string, batch: ImportBatch): Promise<void>;
  batch(id: string): Promise<ImportBatch>;
  /**
   * The items' keys in the order posted — what a status poll needs, without the items' variables; undefined once
   * the import's items have expired (IMPORTS_RETENTION_DAYS).
   */
  keys(id: string): Promise<string[] | undefined>;
  progress(id: string): Promise<ImportProgress>;
  /**
   * Records outcomes and the next window (null: none), in one write where the store allows. `seq` orders the
   * commits (from `progress().commits` up): the window is the latest commit's. `attempt` names the run: where a
   * commit of this `seq` exists already and is not this run's, `LedgerFenced`.
   */
  commit(
    id: string,
    seq: number,
    outcomes: ItemOutcome[],
    window: [number, number] | null,
    attempt: string,
  ): Promise<void>;
  /**
   * The first commit of an import nothing has been recorded for: its first window, in one write that fails where
   * any commit exists — so a fresh import need not read its progress first. True when this call (`attempt`, unique
   * to it) made that commit — also when a retry of its own write found it made; false when the import has one
   * already: read `progress` then.
   */
  begin(id: string, window: [number, number], attempt: string): Promise<boolean>;
  /** The import has ended: its ledger and items may go once IMPORTS_RETENTION_DAYS have passed since `endedAt`. */
  end(id: string, endedAt: string): Promise<void>;
  /**
   * Deletes the items and ledger of imports that ended before `cutoff` (ISO 8601) — never those of an import still
   * running or waiting, whose ledger is what keeps it from sending an item twice. Answers how many went.
   */
  expire(cutoff: string): Promise<number>;
}

const pad = (i: number) => String(i).padStart(7, '0');
/** Table transactions hold at most 100 operations, all in one partition. */
const TRANSACTION_OPS = 100;
/** A string property holds at most 32 K characters. */
const MAX_ROW_CHARS = 30_000;
const CODE_OF = { applied: 'a', failed: 'f', outcome_unknown: 'u', skipped: 's' } as const;
const STATE_OF = { a: 'applied', f: 'failed', u: 'outcome_unknown', s: 'skipped' } as const;
const rowSchema = z.array(
  z.tuple([z.number().int().min(0), z.enum(['a', 'f', 'u', 's'])], z.string()).refine((t) => t.length <= 4),
);

/** An entry's state; ledgers written before `outcome_unknown` was a state of its own kept it as a failure's code. */
const stateOf = (code: keyof typeof STATE_OF, errorCode: string | undefined): ItemOutcome['state'] =>
  code === 'f' && errorCode === 'outcome_unknown' ? 'outcome_unknown' : STATE_OF[code];

/** The row an ended import's ledger holds beside its commits (`endedAt`). */
const END_ROW = 'end';

/** A commit's rows, in order: `c_{seq}_{part}`; the window is on its last part. */
const keyOf = (seq: number, part: number) => `c_${pad(seq)}_${String(part).padStart(4, '0')}`;

/** The rows one commit writes, the window on the last: the same shape for `commit` and `begin`. */
function commitRows(
  id: string,
  seq: number,
  outcomes: ItemOutcome[],
  window: [number, number] | null,
  attempt: string,
) {
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
    attempt,
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
    const container = await this.container();
    const write = (name: string, body: string) =>
      container
        .getBlockBlobClient(`${id}/${name}`)
        .upload(body, Buffer.byteLength(body), { blobHTTPHeaders: { blobContentType: 'application/json' } });
    // The keys apart: a status poll reads them, never the items' variables.
    await write('keys.json', JSON.stringify(batch.items.map((i) => i.key)));
    await write('items.json', JSON.stringify(batch));
  }

  async batch(id: string): Promise<ImportBatch> {
    const buffer = await downloadWhole((await this.container()).getBlobClient(`${id}/items.json`));
    return JSON.parse(buffer.toString('utf8')) as ImportBatch;
  }

  async keys(id: string): Promise<string[] | undefined> {
    try {
      const buffer = await downloadWhole((await this.container()).getBlobClient(`${id}/keys.json`));
      return z.array(z.string()).parse(JSON.parse(buffer.toString('utf8')));
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    // An import whose keys are not kept apart has them in its items (the earlier layout); neither there: expired.
    try {
      return (await this.batch(id)).items.map((i) => i.key);
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
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
      if (row.rowKey === END_ROW) continue;
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
          state: stateOf(state, code),
          ...(code ? { code: storedErrorCode(code) } : {}),
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
    attempt: string,
  ): Promise<void> {
    await this.table();
    const rows = commitRows(id, seq, outcomes, window, attempt);
    // Inserts: a commit of this seq made by another run fails this one (409). The last row (the window) goes in the
    // last transaction: were an earlier one to fail, the old window holds.
    for (let i = 0; i < rows.length; i += TRANSACTION_OPS) {
      const part = rows.slice(i, i + TRANSACTION_OPS);
      try {
        if (part.length === 1) await this.client.createEntity(part[0]);
        else await this.client.submitTransaction(part.map((r): TransactionAction => ['create', r]));
      } catch (err) {
        if (!(await this.ownConflict(err, part[0], attempt))) throw err;
      }
    }
  }

  /**
   * Whether a failed insert met a row this very run wrote — the SDK retries a write whose answer was lost — rather
   * than another run's (then `LedgerFenced`). Any other failure is not a conflict: false, and the caller rethrows.
   */
  private async ownConflict(err: unknown, row: { partitionKey: string; rowKey: string }, attempt: string) {
    const status = statusOf(err) ?? (err as { response?: { status?: number } }).response?.status;
    if (status !== 409) return false;
    const found = await this.client.getEntity<{ attempt?: string }>(row.partitionKey, row.rowKey);
    if (found.attempt === attempt) return true;
    const [, seq] = /^c_(\d+)_/.exec(row.rowKey) ?? [];
    throw new LedgerFenced(row.partitionKey.replace(/^import_/, ''), Number(seq));
  }

  async begin(id: string, window: [number, number], attempt: string): Promise<boolean> {
    await this.table();
    // The first commit's one row (no outcomes yet), marked with the attempt that writes it.
    const [row] = commitRows(id, 0, [], window, attempt);
    try {
      await this.client.createEntity(row);
      return true;
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      // The SDK retries a write whose answer was lost: the row may be this very call's.
      const found = await this.client.getEntity<{ attempt?: string }>(row.partitionKey, row.rowKey);
      return found.attempt === attempt;
    }
  }

  async end(id: string, endedAt: string): Promise<void> {
    await this.table();
    await this.client.upsertEntity({ partitionKey: `import_${id}`, rowKey: END_ROW, endedAt }, 'Replace');
  }

  async expire(cutoff: string): Promise<number> {
    await this.table();
    const ended: string[] = [];
    for await (const row of this.client.listEntities<{ endedAt?: string }>({
      queryOptions: { filter: `RowKey eq '${END_ROW}' and endedAt lt '${cutoff}'`, select: ['PartitionKey'] },
    }))
      ended.push(String(row.partitionKey));
    const container = await this.container();
    for (const partition of ended) {
      const id = partition.replace(/^import_/, '');
      // The items first: a ledger without its items is never read again; the end row last, so an expiry that
      // stops part-way is found and finished by the next.
      for (const name of ['items.json', 'keys.json'])
        await container.getBlobClient(`${id}/${name}`).deleteIfExists();
      for await (const row of this.client.listEntities({
        queryOptions: {
          filter: `PartitionKey eq '${partition}' and RowKey ne '${END_ROW}'`,
          select: ['RowKey'],
        },
      }))
        await this.client.deleteEntity(partition, String(row.rowKey));
      await this.client.deleteEntity(partition, END_ROW);
    }
    return ended.length;
  }
}

/** In one process (the CLI): the same ledger in memory. */
export class MemoryImportStore implements ImportStore {
  private readonly batches = new Map<string, ImportBatch>();
  private readonly state = new Map<string, ImportProgress & { attempts: Map<number, string> }>();

  async saveBatch(id: string, batch: ImportBatch): Promise<void> {
    this.batches.set(id, batch);
  }

  async batch(id: string): Promise<ImportBatch> {
    const b = this.batches.get(id);
    if (!b) throw new Error(`no import ${id}`);
    return b;
  }

  async keys(id: string): Promise<string[] | undefined> {
    return this.batches.get(id)?.items.map((i) => i.key);
  }

  async progress(id: string): Promise<ImportProgress> {
    const p = this.state.get(id);
    return { outcomes: new Map(p?.outcomes), window: p?.window, commits: p?.commits ?? 0 };
  }

  async begin(id: string, window: [number, number], attempt: string): Promise<boolean> {
    const p = this.state.get(id);
    if (p) return p.attempts.get(0) === attempt;
    this.state.set(id, { outcomes: new Map(), window, commits: 1, attempts: new Map([[0, attempt]]) });
    return true;
  }

  async commit(
    id: string,
    seq: number,
    outcomes: ItemOutcome[],
    window: [number, number] | null,
    attempt: string,
  ): Promise<void> {
    const p = this.state.get(id) ?? {
      outcomes: new Map<number, ItemOutcome>(),
      commits: 0,
      attempts: new Map<number, string>(),
    };
    const made = p.attempts.get(seq);
    if (made !== undefined && made !== attempt) throw new LedgerFenced(id, seq);
    p.attempts.set(seq, attempt);
    for (const o of outcomes) p.outcomes.set(o.index, o);
    if (seq >= p.commits) {
      p.window = window ?? undefined;
      p.commits = seq + 1;
    }
    this.state.set(id, p);
  }

  async end(): Promise<void> {}

  async expire(): Promise<number> {
    return 0;
  }
}
