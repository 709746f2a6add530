import type { TableClient } from '@azure/data-tables';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { lazyTable } from '../state/lazy';
import { boundedSummary, runSummarySchema, type RunSummary } from './summary';

/**
 * The run history: one summary per run of every kind, in the app's own Table storage (a JSON file for the CLI
 * without storage), newest first.
 */
export interface RunQuery {
  kind?: string;
  /** Newest first; at most this many (1–100). */
  limit: number;
  /** Only runs that started before this instant (the previous page's last `startedAt`). */
  before?: string;
}

export interface RunHistory {
  record(summary: RunSummary): Promise<void>;
  list(query: RunQuery): Promise<RunSummary[]>;
  get(id: string): Promise<RunSummary | undefined>;
  /** Removes runs that started before `cutoff`; answers how many. */
  purge(cutoff: string): Promise<number>;
}

export const RUNS_TABLE = 'runhistory';
const PARTITION = 'run';
const MAX_MS = 8_640_000_000_000_000;

/** Row keys sort newest first: the start time inverted, then the id (unique within one start). */
export const rowKeyOf = (s: Pick<RunSummary, 'startedAt' | 'id'>) =>
  `${String(MAX_MS - Date.parse(s.startedAt)).padStart(16, '0')}_${encodeURIComponent(s.id)}`;
const keyBound = (iso: string) => `${String(MAX_MS - Date.parse(iso)).padStart(16, '0')}_~`;

/** Table storage (Azurite locally): the start time inverted as row key, so a page is one range query. */
export class TableRunHistory implements RunHistory {
  private readonly table: () => Promise<TableClient>;

  constructor(client: TableClient) {
    this.table = lazyTable(client);
  }

  async record(summary: RunSummary): Promise<void> {
    const s = boundedSummary(runSummarySchema.parse(summary));
    const entity = {
      partitionKey: PARTITION,
      rowKey: rowKeyOf(s),
      id: s.id,
      kind: s.kind,
      json: JSON.stringify(s),
    };
    await (await this.table()).upsertEntity(entity, 'Replace');
  }

  async list(query: RunQuery): Promise<RunSummary[]> {
    const table = await this.table();
    const filters = [`PartitionKey eq '${PARTITION}'`];
    if (query.before) filters.push(`RowKey gt '${keyBound(query.before)}'`);
    if (query.kind) filters.push(`kind eq '${query.kind}'`);
    const out: RunSummary[] = [];
    const pages = table
      .listEntities<{ json: string }>({ queryOptions: { filter: filters.join(' and ') } })
      .byPage({ maxPageSize: query.limit });
    for await (const page of pages) {
      for (const e of page) {
        out.push(runSummarySchema.parse(JSON.parse(e.json)));
        if (out.length >= query.limit) return out;
      }
    }
    return out;
  }

  async get(id: string): Promise<RunSummary | undefined> {
    const table = await this.table();
    const escaped = id.replace(/'/g, "''");
    for await (const e of table.listEntities<{ json: string }>({
      queryOptions: { filter: `PartitionKey eq '${PARTITION}' and id eq '${escaped}'` },
    }))
      return runSummarySchema.parse(JSON.parse(e.json));
    return undefined;
  }

  async purge(cutoff: string): Promise<number> {
    const table = await this.table();
    let removed = 0;
    for await (const e of table.listEntities({
      queryOptions: { filter: `PartitionKey eq '${PARTITION}' and RowKey gt '${keyBound(cutoff)}'` },
    })) {
      await table.deleteEntity(PARTITION, e.rowKey as string);
      removed++;
    }
    return removed;
  }
}

/** For the CLI without storage: a JSON file in `.local/`, newest first. */
export class FileRunHistory implements RunHistory {
  constructor(readonly path: string) {}

  private async all(): Promise<RunSummary[]> {
    try {
      return z.array(runSummarySchema).parse(JSON.parse(await readFile(this.path, 'utf8')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  private async save(runs: RunSummary[]) {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(runs), { mode: 0o600 });
    await rename(tmp, this.path);
  }

  async record(summary: RunSummary): Promise<void> {
    // Bounded as in Table storage, so a summary reads the same wherever it was kept.
    const s = boundedSummary(runSummarySchema.parse(summary));
    const runs = (await this.all()).filter((r) => r.id !== s.id || r.kind !== s.kind);
    runs.push(s);
    runs.sort((a, b) => rowKeyOf(a).localeCompare(rowKeyOf(b)));
    await this.save(runs);
  }

  async list(query: RunQuery): Promise<RunSummary[]> {
    return (await this.all())
      .filter((r) => (!query.kind || r.kind === query.kind) && (!query.before || r.startedAt < query.before))
      .slice(0, query.limit);
  }

  async get(id: string): Promise<RunSummary | undefined> {
    return (await this.all()).find((r) => r.id === id);
  }

  async purge(cutoff: string): Promise<number> {
    const runs = await this.all();
    const kept = runs.filter((r) => r.startedAt >= cutoff);
    if (kept.length !== runs.length) await this.save(kept);
    return runs.length - kept.length;
  }
}
