import { z } from 'zod';
import { errorCodeSchema } from '../errors/code-schema';
import { schemaFindingsSchema } from './run-details';

/** The run in progress: a run that did not finish is resumed, under the same id, by the next one. */
export const syncRunRecordSchema = z.object({
  runId: z.string().min(1),
  startedAt: z.string(),
  /** Start over: every snapshot ignored (`sync --full`). */
  full: z.boolean(),
  /** Every stream gets a full pass, on its snapshot (`sync --full-pass`). */
  fullPass: z.boolean().optional(),
  /** The run's streams as its catalog had them when it began: a resumed run reads with the same ones. */
  streams: z.array(z.unknown()).optional(),
  /** Streams the run cannot read (the tenant's schema moved under them), with why. */
  blocked: z.record(z.string(), z.object({ code: errorCodeSchema, message: z.string() })).optional(),
  /** What the run found about the tenant's schema (shared/catalog/): fields not synced, changes adopted. */
  schema: schemaFindingsSchema.optional(),
});
export type SyncRunRecord = z.infer<typeof syncRunRecordSchema>;

/** The stored run record, or undefined when it is unreadable: a new run starts rather than every run failing. */
export const parseRunRecord = (text: string): SyncRunRecord | undefined => {
  try {
    return syncRunRecordSchema.parse(JSON.parse(text));
  } catch {
    return undefined; // unreadable: start a new run rather than fail every run from now on
  }
};
