import type { RejectedPolicy } from '../../changes';
import type { Clock } from '../../clock';

/** How the delta sink writes: the app's settings for it, and the clock it reads time from. */
export interface DeltaOptions {
  schemaChanges: 'report' | 'propagate';
  rejected: RejectedPolicy;
  retentionHours: number;
  checkpointInterval: number;
  /** About this many rows a data file of the current table, when the table is made (DELTA_ROWS_PER_FILE). */
  rowsPerFile?: number;
  /** New current-records tables get deletion vectors (reader 3 / writer 7): DELTA_DELETION_VECTORS. */
  deletionVectors?: boolean;
  clock: Clock;
}
