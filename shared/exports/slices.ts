import type { Hasher } from '../personal/policy';
import { z } from 'zod';
import type { TenantGraphqlClient } from '../graphql/client';
import type { StreamDefinition } from '../streams';
import { fileSchema, type ExportFormat, type StoredFile } from './file';
import type { ExportStorage } from './storage';
import { writeExportStream, type ExportFile } from './write';

/**
 * An export's one way: the pager's pages, encoded (./write.ts), into an upload (./storage.ts, which only uploads) —
 * in slices of at most ACTIVITY_SLICE_SECONDS, each resuming where the one before stopped.
 */

/**
 * What the slices of one stream's file have done so far, kept beside it (`{id}/{stream}.slices.json`): where the
 * next slice starts, the blocks staged before it (committed by the last slice, with its own), and — once the last
 * slice has committed — the file, so a slice run again (a replayed or retried activity) answers what it answered.
 */
const sliceStateSchema = z.object({
  /** Slices done: the next slice's number. */
  slices: z.number().int().min(0),
  cursor: z.string().nullable(),
  written: z.boolean(),
  /** The page size the tenant let the listing go on with, when it refused the stream's own. */
  pageSize: z.number().int().min(1).optional(),
  records: z.number().int().min(0),
  bytes: z.number().int().min(0),
  blocks: z.array(z.string()),
  file: fileSchema.optional(),
});
type SliceState = z.infer<typeof sliceStateSchema>;

/** One slice's outcome: the stored file, or where the stream stands with more to write. */
export type SliceOutcome =
  { done: StoredFile } | { more: { stream: string; slice: number; records: number } };

/**
 * One slice of a stream's file: from where the slices before it stopped, until `deadlineMs` (text formats; a
 * Parquet file is written in one slice). Every slice but the last only stages its blocks; the last commits them all
 * in order, so the blob appears whole or not at all, and a slice that failed or stopped part-way leaves nothing
 * that counts (its blocks are never committed; the slice runs again from the same cursor). A file of one slice is
 * hashed as it is written; one of several is read back once committed for its sha256.
 */
export async function writeSlice(
  storage: ExportStorage,
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  task: { id: string; format: ExportFormat; gzip: boolean; slice?: number },
  options: {
    abortSignal?: AbortSignal;
    deadlineMs?: number;
    clock?: { now(): number };
    hasher?: Hasher;
  } = {},
): Promise<SliceOutcome> {
  const slice = task.slice ?? 0;
  const fresh: SliceState = { slices: 0, cursor: null, written: false, records: 0, bytes: 0, blocks: [] };
  const stored = await storage.readSlices(task.id, stream.name);
  // None yet: the stream's first slice (a file of one slice never writes one).
  if (stored === undefined && slice > 0)
    throw new Error(`export ${task.id}: slice ${slice} of ${stream.name} without the slices before it`);
  const state: SliceState = stored === undefined ? fresh : sliceStateSchema.parse(stored);
  // Run again (a replayed or retried activity): what it did is in the state.
  if (slice < state.slices)
    return state.file && slice === state.slices - 1
      ? { done: state.file }
      : { more: { stream: stream.name, slice, records: state.records } };
  if (slice > state.slices)
    throw new Error(`export ${task.id}: slice ${slice} of ${stream.name} before slice ${state.slices}`);
  let staged: readonly string[] = [];
  const written = await writePart(storage, graphql, stream, task, {
    abortSignal: options.abortSignal,
    deadlineMs: options.deadlineMs,
    clock: options.clock,
    hasher: options.hasher,
    continueFrom:
      slice > 0 ? { cursor: state.cursor, written: state.written, pageSize: state.pageSize } : undefined,
    // Committed by the last slice only, after the blocks of every slice before it.
    commitAfter: state.blocks,
    onStaged: (ids) => (staged = ids),
  });
  const next: SliceState = {
    slices: slice + 1,
    cursor: written.stoppedAt?.cursor ?? null,
    written: written.stoppedAt?.written ?? true,
    ...(written.stoppedAt?.pageSize ? { pageSize: written.stoppedAt.pageSize } : {}),
    records: state.records + written.records,
    bytes: state.bytes + written.bytes,
    blocks: [...state.blocks, ...staged],
  };
  if (written.stoppedAt) {
    await storage.saveSlices(task.id, stream.name, next);
    return { more: { stream: stream.name, slice, records: next.records } };
  }
  const file: StoredFile =
    slice === 0
      ? { ...written.file, slices: 1 }
      : {
          stream: stream.name,
          name: written.file.name,
          records: next.records,
          bytes: next.bytes,
          sha256: await storage.sha256Of(written.file.name, next.bytes, options.abortSignal),
          slices: slice + 1,
        };
  // Only a file of several slices needs remembering: one of a single slice is written again whole if run again.
  if (slice > 0) await storage.saveSlices(task.id, stream.name, { ...next, file });
  return { done: file };
}

/** A stream's whole file in one go (what a slice of an export with time enough does). */
export async function writeStream(
  storage: ExportStorage,
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  task: { id: string; format: ExportFormat; gzip: boolean },
  options: { abortSignal?: AbortSignal; hasher?: Hasher } = {},
): Promise<StoredFile> {
  return (await writePart(storage, graphql, stream, task, options)).file;
}

/** A file, or one slice's part of it: staged, and committed after `commitAfter` unless it stopped early. */
async function writePart(
  storage: ExportStorage,
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  task: { id: string; format: ExportFormat; gzip: boolean },
  options: {
    abortSignal?: AbortSignal;
    deadlineMs?: number;
    clock?: { now(): number };
    continueFrom?: { cursor: string | null; written: boolean; pageSize?: number };
    /** The blocks committed before this upload's (an export's earlier slices); none staged when it stops early. */
    commitAfter?: string[];
    /** The ids of the blocks this upload staged, once it has ended. */
    onStaged?: (ids: readonly string[]) => void;
    hasher?: Hasher;
  } = {},
): Promise<{ file: StoredFile; records: number; bytes: number; stoppedAt?: ExportFile['stoppedAt'] }> {
  const name = storage.fileName(task.id, stream.name, task);
  const stop = new AbortController();
  const signal = options.abortSignal ? AbortSignal.any([stop.signal, options.abortSignal]) : stop.signal;
  // Known before the writer's output ends (and the upload commits): a slice that stopped early stages only.
  let stopped = false;
  // One upload, committed at its end — or, should a Parquet export start over (a page changed its columns after
  // some of the file went out), another after it: the first is abandoned, never committed.
  const upload = () =>
    storage.upload(
      name,
      { stream: stream.name, ...task },
      {
        abortSignal: signal,
        commitAfter: () => (stopped ? 'none' : (options.commitAfter ?? [])),
        onFailed: (err) => stop.abort(err),
      },
    );
  let current = upload();
  const restart = async () => {
    await current.abandon();
    current = upload();
    return current.pipe;
  };
  const writing = writeExportStream(graphql, stream, current.pipe, {
    ...task,
    hasher: options.hasher,
    abortSignal: signal,
    restart,
    continueFrom: options.continueFrom,
    deadlineMs: options.deadlineMs,
    clock: options.clock,
    onStop: () => (stopped = true),
  }).catch((err: unknown) => {
    current.pipe.destroy(err as Error);
    throw err;
  });
  const [written] = await Promise.allSettled([writing]);
  const [uploaded] = await Promise.allSettled([current.done]);
  // The reading side's error says more than the upload's "aborted", and the other way round.
  if (written.status === 'rejected' && !stop.signal.aborted) throw written.reason;
  if (uploaded.status === 'rejected') throw uploaded.reason;
  if (written.status === 'rejected') throw written.reason;
  options.onStaged?.(current.pipe.ids);
  const { records, bytes, sha256, stoppedAt } = written.value;
  return {
    file: { stream: stream.name, name, records, bytes, sha256 },
    records,
    bytes,
    ...(stoppedAt ? { stoppedAt } : {}),
  };
}
