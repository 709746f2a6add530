import type { SyncRunRecord } from './run-record';

/**
 * Where the sync keeps its state between runs, per tenant: each stream's snapshot (one object), each stream's
 * checkpoint log (appended once per page) and the run record. One round trip per page, never per record.
 */
export interface SyncStateStore {
  readonly description: string;
  /**
   * The snapshot, streamed (a pass reads it twice: at its start, and again at its end); undefined when none. A
   * chunk may be valid only until the next one is asked for (the file store reads every chunk into one buffer).
   */
  readSnapshot(tenant: string, stream: string): Promise<AsyncIterable<Buffer> | undefined>;
  /**
   * The snapshot as it streams past (from the checkpoint log and the previous snapshot): never whole in memory. A
   * chunk is valid only until the next one is asked for (the entries a pass keeps are views of the chunk it reads).
   */
  writeSnapshot(tenant: string, stream: string, snapshot: AsyncIterable<Buffer>): Promise<void>;
  /** The checkpoint log, streamed; undefined when there is none. */
  readCheckpoint(tenant: string, stream: string): Promise<AsyncIterable<Buffer> | undefined>;
  /** `create` starts a new log, replacing any older one. */
  appendCheckpoint(
    tenant: string,
    stream: string,
    record: Buffer,
    options?: { create?: boolean },
  ): Promise<void>;
  clearCheckpoint(tenant: string, stream: string): Promise<void>;
  readRun(tenant: string): Promise<SyncRunRecord | undefined>;
  writeRun(tenant: string, run: SyncRunRecord | undefined): Promise<void>;
  /**
   * Runs `work` unless another caller is running it for this tenant right now (then `{ ran: false }` at once):
   * starting a run is check-then-start, and two starters must not both see "none running".
   */
  exclusively<T>(tenant: string, work: () => Promise<T>): Promise<Exclusive<T>>;
}

export type Exclusive<T> = { ran: true; value: T } | { ran: false };

/**
 * How long a starter holds the tenant's start lease: it ends when the start does, or by itself after this should
 * the process die holding it (Blob Storage takes 15–60 seconds).
 */
export const START_LEASE_SECONDS = 30;
