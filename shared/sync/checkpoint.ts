import { z } from 'zod';
import { noCounts, streamCountsSchema, type StreamCounts } from '../changes';

/**
 * A stream's checkpoint is an append-only log, one record per page, so checkpointing after every page costs
 * one small append — never a rewrite of the state. Each record: [u32 length][u32 JSON length][JSON][entries],
 * where entries are the page's additions to the next snapshot (snapshot format).
 */
const counts = streamCountsSchema;

const recordSchema = z.discriminatedUnion('kind', [
  /** The pass began against the stored snapshot with this digest. */
  z.object({
    kind: z.literal('start'),
    runId: z.string(),
    /** The stream definition the pass reads with (shared/sync/passes.ts). */
    catalog: z.string().optional(),
    previousDigest: z.string(),
    full: z.boolean(),
    /** Full or incremental (logs written before there were incremental passes: full), and from when. */
    pass: z.enum(['full', 'incremental']).default('full'),
    since: z.string().optional(),
  }),
  /** A page was delivered: where to carry on, and whether the listing ended with it. */
  z.object({
    kind: z.literal('page'),
    page: z.number(),
    cursor: z.string().nullable(),
    last: z.boolean(),
    changed: z.boolean(),
    counts,
    /** The listing so far: records listed again, the totals the pages reported, the greatest "changed at". */
    repeated: z.number().optional(),
    total: z.object({ min: z.number(), max: z.number() }).optional(),
    highWater: z.string().optional(),
    /** The page size the listing went on with, when the tenant refused a larger one, and which limit refused it. */
    pageSize: z.number().int().min(1).optional(),
    limit: z.string().optional(),
    /** Newest first, a record came out of order: the pass reads to the end (shared/sync/incremental.ts). */
    orderBroken: z.boolean().optional(),
  }),
  /** Deletions delivered; the sink's file and the snapshot are being written. */
  z.object({ kind: z.literal('sealing'), counts, changedPages: z.array(z.number()) }),
  /** The stream's pass is complete: snapshot stored, sink sealed. */
  z.object({ kind: z.literal('done'), counts }),
]);
export type CheckpointRecord = z.infer<typeof recordSchema>;
/** A page's record, as the pass writes it. */
export type PageRecord = Extract<z.input<typeof recordSchema>, { kind: 'page' }>;

export function encodeRecord(
  record: z.input<typeof recordSchema>,
  entries: Buffer = Buffer.alloc(0),
): Buffer {
  const json = Buffer.from(JSON.stringify(record));
  const head = Buffer.alloc(8);
  head.writeUInt32BE(4 + json.length + entries.length, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, entries]);
}

export interface Checkpoint {
  runId: string;
  catalog?: string;
  previousDigest: string;
  full: boolean;
  pass: 'full' | 'incremental';
  since?: string;
  repeated?: number;
  total?: { min: number; max: number };
  highWater?: string;
  /** A page size lowered during the pass (shared/graphql/limits.ts): a resumed slice goes on with it. */
  pageSize?: { size: number; limit: string };
  orderBroken?: boolean;
  /** The last page delivered (0: none yet), its cursor, and whether it was the listing's last. */
  page: number;
  cursor: string | null;
  listingDone: boolean;
  counts: StreamCounts;
  changedPages: number[];
  sealing?: { counts: StreamCounts; changedPages: number[] };
  done?: { counts: StreamCounts };
}

function parseRecord(json: string): CheckpointRecord | undefined {
  try {
    const parsed = recordSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The records of a checkpoint log as it streams in — never the whole log in memory, which at 1 M records is
 * 30 MB. A torn or unreadable record (the process died mid-append) ends the log.
 */
export async function* logRecords(
  log: AsyncIterable<Buffer>,
): AsyncGenerator<{ record: CheckpointRecord; entries: Buffer }> {
  // A record split across chunks is joined on its own (a few KiB); the chunks themselves are read in place: joining
  // the rest of a chunk with the next one would copy the whole log once more.
  let carry: Buffer[] = [];
  let carried = 0;
  let need = 8; // bytes the record being carried needs: its length prefix, then the whole record
  for await (const chunk of log) {
    let at = 0;
    // The record carried from the chunks before: its length prefix first, then as much as that prefix says.
    while (carried) {
      const take = Math.min(need - carried, chunk.length - at);
      carry.push(chunk.subarray(at, at + take));
      carried += take;
      at += take;
      if (carried < need) break; // this chunk is used up: the record goes on in the next
      const joined = Buffer.concat(carry, carried);
      const size = 4 + joined.readUInt32BE(0);
      if (size > carried) {
        carry = [joined]; // only the length prefix was whole
        need = size;
        continue;
      }
      carry = [];
      carried = 0;
      const parsed = recordAt(joined, 0);
      if (!parsed) return;
      yield parsed;
    }
    if (carried) continue;
    for (;;) {
      if (at + 8 > chunk.length) break;
      const end = at + 4 + chunk.readUInt32BE(at);
      if (end > chunk.length) break;
      const parsed = recordAt(chunk, at);
      if (!parsed) return;
      yield parsed;
      at = end;
    }
    if (at < chunk.length) {
      carry = [chunk.subarray(at)];
      carried = chunk.length - at;
      need = carried >= 8 ? 4 + chunk.readUInt32BE(at) : 8;
    }
  }
}

/** The record at `at` (whole in `buf`), or undefined when it is unreadable (a torn append ends the log). */
function recordAt(buf: Buffer, at: number): { record: CheckpointRecord; entries: Buffer } | undefined {
  const end = at + 4 + buf.readUInt32BE(at);
  const jsonLength = buf.readUInt32BE(at + 4);
  if (8 + jsonLength > end - at) return undefined;
  const record = parseRecord(buf.toString('utf8', at + 8, at + 8 + jsonLength));
  return record && { record, entries: buf.subarray(at + 8 + jsonLength, end) };
}

/** Reads where a pass stands from its checkpoint log; undefined without a readable start record. */
export async function decodeCheckpoint(log: AsyncIterable<Buffer>): Promise<Checkpoint | undefined> {
  let cp: Checkpoint | undefined;
  for await (const { record } of logRecords(log)) {
    if (!cp) {
      if (record.kind !== 'start') return undefined;
      cp = {
        runId: record.runId,
        ...(record.catalog ? { catalog: record.catalog } : {}),
        previousDigest: record.previousDigest,
        full: record.full,
        pass: record.pass,
        ...(record.since ? { since: record.since } : {}),
        page: 0,
        cursor: null,
        listingDone: false,
        counts: noCounts(),
        changedPages: [],
      };
    } else if (record.kind === 'page') {
      Object.assign(cp, { page: record.page, cursor: record.cursor, listingDone: record.last });
      cp.counts = record.counts;
      cp.repeated = record.repeated;
      cp.total = record.total;
      cp.highWater = record.highWater;
      if (record.pageSize !== undefined)
        cp.pageSize = { size: record.pageSize, limit: record.limit ?? 'the tenant’s limit' };
      if (record.orderBroken) cp.orderBroken = true;
      if (record.changed) cp.changedPages.push(record.page);
    } else if (record.kind === 'sealing') cp.sealing = record;
    else if (record.kind === 'done') cp.done = record;
  }
  return cp;
}

/** The next snapshot's entries as the log holds them, page by page: what the pass stores when it completes. */
export async function* logEntries(log: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const { entries } of logRecords(log)) if (entries.length) yield entries;
}
