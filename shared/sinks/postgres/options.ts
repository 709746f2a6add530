import type { RejectedPolicy } from '../../changes';

/** How the postgres sink stores (./sink.ts): where, deletes, refused records, groups. */
export interface PostgresSinkOptions {
  /** The schema the tables live in; created when missing. */
  schema: string;
  /** Deletes set `deleted_at` instead of removing the row. */
  softDelete?: boolean;
  /** A record PostgreSQL cannot store: fail the page naming it (default), or set it aside in `_quarantine`. */
  rejected?: RejectedPolicy;
  /** Records held (pages written with `hold`) before they are stored in one transaction; default BATCH_ROWS. */
  batchRows?: number;
}
