import { createHash } from 'node:crypto';
import { z } from 'zod';
import { noCounts, streamCountsSchema, type StreamCounts } from './counts';

/**
 * A stream's checkpoint is an append-only log, one record per page, so checkpointing after every page costs
 * one small append — never a rewrite of the state. Each record: [u32 length][u32 JSON length][JSON][entries],
 * where entries are the page's additions to the next snapshot (snapshot format).
 */
const counts = streamCountsSchema;

const recordSchema = z.discriminatedUnion('kind', [
  /** The pass began against the stored snapshot with this digest. */
  z.object({ kind: z.literal('start'), runId: z.string(), previousDigest: z.string(), full: z.boolean() }),
  /** A page was delivered: where to carry on, and whether the listing ended with it. */
  z.object({
    kind: z.literal('page'),
    page: z.number(),
    cursor: z.string().nullable(),
    last: z.boolean(),
    changed: z.boolean(),
    counts,
  }),
  /** Deletions delivered; the sink's file and the snapshot are being written. */
  z.object({ kind: z.literal('sealing'), counts, changedPages: z.array(z.number()) }),
  /** The stream's pass is complete: snapshot stored, sink sealed. */
  z.object({ kind: z.literal('done'), counts }),
]);
export type CheckpointRecord = z.infer<typeof recordSchema>;

export function encodeRecord(record: CheckpointRecord, entries: Buffer = Buffer.alloc(0)): Buffer {
  const json = Buffer.from(JSON.stringify(record));
  const head = Buffer.alloc(8);
  head.writeUInt32BE(4 + json.length + entries.length, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, entries]);
}

export interface Checkpoint {
  runId: string;
  previousDigest: string;
  full: boolean;
  /** The last page delivered (0: none yet), its cursor, and whether it was the listing's last. */
  page: number;
  cursor: string | null;
  listingDone: boolean;
  counts: StreamCounts;
  changedPages: number[];
  /** Every entry of the next snapshot so far. */
  entries: Buffer;
  sealing?: { counts: StreamCounts; changedPages: number[] };
  done?: { counts: StreamCounts };
}

/** Reads a checkpoint log; a torn last record (the process died mid-append) is ignored. */
export function decodeCheckpoint(log: Buffer): Checkpoint | undefined {
  const records: Array<{ record: CheckpointRecord; entries: Buffer }> = [];
  for (let at = 0; at + 8 <= log.length;) {
    const end = at + 4 + log.readUInt32BE(at);
    if (end > log.length) break;
    const jsonLength = log.readUInt32BE(at + 4);
    const parsed = recordSchema.safeParse(JSON.parse(log.toString('utf8', at + 8, at + 8 + jsonLength)));
    if (!parsed.success) break;
    records.push({ record: parsed.data, entries: log.subarray(at + 8 + jsonLength, end) });
    at = end;
  }
  const start = records[0]?.record;
  if (start?.kind !== 'start') return undefined;
  const cp: Checkpoint = {
    runId: start.runId,
    previousDigest: start.previousDigest,
    full: start.full,
    page: 0,
    cursor: null,
    listingDone: false,
    counts: noCounts(),
    changedPages: [],
    entries: Buffer.concat(records.map((r) => r.entries)),
  };
  for (const { record } of records.slice(1)) {
    if (record.kind === 'page') {
      Object.assign(cp, { page: record.page, cursor: record.cursor, listingDone: record.last });
      cp.counts = record.counts;
      if (record.changed) cp.changedPages.push(record.page);
    } else if (record.kind === 'sealing') cp.sealing = record;
    else if (record.kind === 'done') cp.done = record;
  }
  return cp;
}

/** Identifies the stored snapshot a pass started from; 'none' when there was none. */
export const snapshotDigest = (snapshot: Buffer | undefined): string =>
  snapshot ? createHash('sha256').update(snapshot).digest('hex').slice(0, 32) : 'none';
