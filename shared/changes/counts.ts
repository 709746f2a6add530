import { z } from 'zod';

/** A stream pass's counts, as every result, checkpoint and manifest carries them (pure: the orchestrator uses it). */
export const streamCountsSchema = z.object({
  read: z.number(),
  created: z.number(),
  updated: z.number(),
  deleted: z.number(),
  unchanged: z.number(),
  /** Records a sink set aside (SYNC_REJECTED_RECORDS=quarantine); absent when none was. */
  rejected: z.number().optional(),
  /** Records of a stream known by content that repeated one already read (identical rows): delivered once. */
  duplicates: z.number().optional(),
});
export type StreamCounts = z.infer<typeof streamCountsSchema>;

export const noCounts = (): StreamCounts => ({ read: 0, created: 0, updated: 0, deleted: 0, unchanged: 0 });
