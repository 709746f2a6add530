import type { Hasher } from '../personal/policy';
import type { Clock } from '../clock';
import type { ErrorCode } from '../errors';
import type { Logger } from '../log';
import type { StreamCounts } from '../changes';
import type { LoweredPageSize } from './run-details';
import type { ChangeSink } from '../sinks';
import type { PassKind, PassPolicy } from './passes';
import type { SyncStateStore } from './sync-state';

/** What a sync run works with, and what one stream's pass comes to: shared by the run and a stream's phases. */
export interface SyncContext {
  tenant: string;
  state: SyncStateStore;
  sink: ChangeSink;
  clock?: Clock;
  logger?: Logger;
  abortSignal?: AbortSignal;
  /** How often incremental streams get a full pass, and their overlap (default: DEFAULT_PASS_POLICY). */
  passes?: PassPolicy;
  /** The key personal fields are hashed with (SYNC_HASH_SECRET_NAME), asked for by a stream that hashes one. */
  hashKey?: () => Promise<Hasher>;
  /** After each page; `expected` is the record count of the last complete pass (0: unknown). */
  onPage?: (stream: string, counts: StreamCounts, expected: number) => void;
}

export interface StreamResult {
  stream: string;
  ok: boolean;
  /** False when the slice ended at its deadline with pages left: call again to carry on. */
  done: boolean;
  counts: StreamCounts;
  error?: string;
  errorCode?: ErrorCode;
  /** Time this stream's slices took, summed by the orchestrator (for run history). */
  durationMs?: number;
  /** Whether the pass read everything or only what changed (shared/sync/passes.ts). */
  pass?: PassKind;
  /** The page size the stream reads with when the tenant refused its own, and which limit refused it. */
  pageSize?: LoweredPageSize;
  /** An incremental pass read newest first, and the tenant did not keep that order: it read on, the next is full. */
  orderNotKept?: true;
}
