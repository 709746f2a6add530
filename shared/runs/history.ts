import type { TableClient } from '@azure/data-tables';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { streamCountsSchema } from '../changes';
import { bounded } from '../errors';
import { errorCodeSchema } from '../error-codes';
import { lazyTable } from '../state/lazy';

/**
 * Run history: one summary per sync run and per export, in the app's own Table storage, so an operator can
 * see every unattended run (GET /api/manage/runs, the status page). Never a record, token or secret: counts,
 * times, and an error's code, message and the action that fixes it.
 */
/** What a sync found about the tenant's schema (shared/catalog/): fields not synced, changes adopted. */
export const schemaFindingsSchema = z.object({
  added: z.record(z.string(), z.array(z.string())).optional(),
  changes: z
    .array(z.object({ stream: z.string(), added: z.array(z.string()), removed: z.array(z.string()) }))
    .optional(),
  introspection: z.boolean().optional(),
});

/** A stream's page size lowered because the tenant refused its own (shared/graphql/limits.ts), and which limit. */
export const loweredPageSizeSchema = z.object({ size: z.number().int().min(1), limit: z.string().max(200) });
export type LoweredPageSize = z.infer<typeof loweredPageSizeSchema>;

export const runSummarySchema = z.object({
  id: z.string().min(1).max(200),
  kind: z.enum(['sync', 'export', 'login', 'import']),
  trigger: z.enum(['schedule', 'manual', 'resumed', 'request']),
  startedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().optional(),
  outcome: z.enum(['running', 'succeeded', 'failed']),
  durationMs: z.number().int().min(0).optional(),
  streams: z.record(
    z.string(),
    streamCountsSchema.extend({
      ok: z.boolean(),
      durationMs: z.number().int().min(0).optional(),
      error: z.string().optional(),
      errorCode: errorCodeSchema.optional(),
      /** A sync stream's pass: every record read, or only those changed since the last one. */
      pass: z.enum(['full', 'incremental']).optional(),
      pageSize: loweredPageSizeSchema.optional(),
      /** Read newest first, and the tenant did not keep the order: the pass read on; the next is a full one. */
      orderNotKept: z.literal(true).optional(),
    }),
  ),
  tokenRequests: z.number().int().min(0).optional(),
  error: z.object({ code: errorCodeSchema, message: z.string(), action: z.string().optional() }).optional(),
  /** A resumed run's earlier endings: each failure that stopped it before, newest last (at most five). */
  interruptions: z
    .array(z.object({ at: z.string(), code: errorCodeSchema, message: z.string() }))
    .max(5)
    .optional(),
  sinks: z.string().optional(),
  /** A sync's view of the tenant's schema: fields it has that a stream does not read; changes adopted. */
  schema: schemaFindingsSchema.optional(),
  /** An import's operation, its items' outcomes, the first failures (key and the tenant's message), and a wait. */
  import: z
    .object({
      operation: z.string(),
      total: z.number().int(),
      applied: z.number().int(),
      failed: z.number().int(),
      /** Sent, answer lost (absent in summaries written before the state existed). */
      outcome_unknown: z.number().int().optional(),
      skipped: z.number().int(),
      pending: z.number().int(),
      /** The admin whose session applies it. */
      person: z.string().optional(),
      failures: z
        .array(z.object({ key: z.string(), code: errorCodeSchema.optional(), message: z.string() }))
        .max(20),
      waitingForAdmin: z.object({ since: z.string(), reason: z.string() }).optional(),
      waitingForTenant: z.object({ since: z.string(), reason: z.string() }).optional(),
    })
    .optional(),
});
export type RunSummary = z.infer<typeof runSummarySchema>;
export type RunKind = RunSummary['kind'];

/** A run's end and how long it took, as every kind's summary records them. */
export const finishedFields = (startedAt: string, finishedAt: string) => ({
  finishedAt,
  durationMs: Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
});

/**
 * Table storage keeps at most 32 K characters in one property: a summary is stored as one. Error texts are bounded
 * first (the run's, each stream's, each interruption's); should the summary still be too long, the streams' error
 * texts go, then the interruptions. Never the outcome, the counts or the run's own error code and action.
 */
export const MAX_SUMMARY_CHARS = 30_000;

export function boundedSummary(summary: RunSummary): RunSummary {
  let s: RunSummary = {
    ...summary,
    ...(summary.error ? { error: { ...summary.error, message: bounded(summary.error.message) } } : {}),
    streams: Object.fromEntries(
      Object.entries(summary.streams).map(([name, c]) => [
        name,
        c.error ? { ...c, error: bounded(c.error, 500) } : c,
      ]),
    ),
    ...(summary.interruptions
      ? { interruptions: summary.interruptions.map((i) => ({ ...i, message: bounded(i.message, 500) })) }
      : {}),
  };
  if (JSON.stringify(s).length > MAX_SUMMARY_CHARS)
    s = {
      ...s,
      streams: Object.fromEntries(
        Object.entries(s.streams).map(([name, c]) => [name, { ...c, error: undefined }]),
      ),
    };
  if (JSON.stringify(s).length > MAX_SUMMARY_CHARS) s = { ...s, interruptions: undefined };
  return s;
}

/**
 * The least a run's summary says — what it was, when, and how it ended, with its error's code and action — for when
 * the whole one could not be written: a run that started always ends in the history.
 */
export function minimalSummary(summary: RunSummary): RunSummary {
  return {
    id: summary.id,
    kind: summary.kind,
    trigger: summary.trigger,
    startedAt: summary.startedAt,
    ...(summary.finishedAt ? { finishedAt: summary.finishedAt, durationMs: summary.durationMs } : {}),
    outcome: summary.outcome,
    streams: {},
    ...(summary.error
      ? {
          error: {
            code: summary.error.code,
            message: bounded(summary.error.message, 300),
            ...(summary.error.action ? { action: summary.error.action } : {}),
          },
        }
      : {}),
  };
}

export interface RunQuery {
  kind?: RunKind;
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
