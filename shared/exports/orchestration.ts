import type { OrchestrationContext, Task } from 'durable-functions';
import { z } from 'zod';
import { EXPORT_FORMATS, fileSchema } from './file';
import { REQUEST_ID } from '../ids';
import type { RunKind } from '../runs/kind';

export const EXPORT = {
  orchestrator: 'exportRun',
  stream: 'exportStream',
  finish: 'exportFinish',
  fail: 'exportFail',
  notify: 'exportNotify',
} as const;

/** Streams of one export written at once. */
export const EXPORT_CONCURRENCY = 3;

export const exportInstanceId = (id: string) => `export-${id}`;

/** The export's kind of run: each in its own instance. */
export const EXPORT_RUN: RunKind = {
  kind: 'export',
  span: 'export run',
  failedRecord: 'export failed',
  instanceId: (run) => exportInstanceId(run.id),
  perRun: true,
};

export const exportInputSchema = z.object({
  id: z.string().regex(REQUEST_ID),
  tenant: z.string(),
  streams: z.array(z.string()).min(1),
  format: z.enum(EXPORT_FORMATS),
  gzip: z.boolean(),
  callbackUrl: z.string().optional(),
  requestedAt: z.string(),
});
export type ExportInput = z.infer<typeof exportInputSchema>;

export const streamTaskSchema = exportInputSchema.pick({ id: true, format: true, gzip: true }).extend({
  stream: z.string(),
  /** Which activity of the stream's file this is, from 0 (shared/exports/slices.ts: `writeSlice`). */
  slice: z.number().int().min(0).default(0),
});
export type StreamTask = z.infer<typeof streamTaskSchema>;

export const streamOutcomeSchema = z.union([
  z.object({ ok: z.literal(true), file: fileSchema }),
  z.object({ ok: z.literal(false), stream: z.string(), error: z.string() }),
]);
export type StreamOutcome = z.infer<typeof streamOutcomeSchema>;

/** A slice that ended with pages left: the next activity carries on (`slice + 1`). */
export interface MoreToWrite {
  ok: true;
  more: true;
  stream: string;
  slice: number;
  records: number;
}

/** What one stream activity answers: the stream's outcome, or that it goes on in the next slice. */
export type StreamSlice = StreamOutcome | MoreToWrite;

export type ExportStreamState = 'pending' | 'running' | 'completed' | 'failed';

/**
 * An export as its status route and callback show it (and as the orchestration's custom status keeps it):
 * never a token, a durable management URL or a download link — links are signed when asked for.
 */
export const exportStateSchema = z.object({
  id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  format: z.enum(EXPORT_FORMATS),
  gzip: z.boolean(),
  requestedAt: z.string(),
  finishedAt: z.string().optional(),
  streams: z.array(
    z.object({
      name: z.string(),
      status: z.enum(['pending', 'running', 'completed', 'failed']),
      records: z.number().optional(),
      bytes: z.number().optional(),
      sha256: z.string().optional(),
      /** Activities the stream's file took so far (ACTIVITY_SLICE_SECONDS each at most). */
      slices: z.number().int().optional(),
      error: z.string().optional(),
    }),
  ),
  progress: z.object({ streamsDone: z.number(), streamsTotal: z.number() }),
  /** Blob names of the files and the manifest (inside `exports`), when completed. */
  files: z.array(fileSchema).optional(),
  manifest: z.string().optional(),
  error: z.string().optional(),
  callback: z
    .object({ status: z.enum(['pending', 'delivered', 'failed']), error: z.string().optional() })
    .optional(),
});
export type ExportState = z.infer<typeof exportStateSchema>;

/** The state from the input and what the streams have done so far (`going`: records and slices of those running). */
export function exportState(
  input: ExportInput,
  outcomes: Record<string, StreamOutcome>,
  running: string[],
  final?: { status: 'completed' | 'failed'; finishedAt: string; manifest?: string; error?: string },
  going: Record<string, { records: number; slices: number }> = {},
): ExportState {
  const streams = input.streams.map((name) => {
    const o = outcomes[name];
    if (o?.ok) {
      const { records, bytes, sha256, slices } = o.file;
      return { name, status: 'completed' as const, records, bytes, sha256, slices: slices ?? 1 };
    }
    if (o) return { name, status: 'failed' as const, error: o.error };
    if (!running.includes(name)) return { name, status: 'pending' as const };
    const g = going[name];
    return { name, status: 'running' as const, ...(g ? { records: g.records, slices: g.slices } : {}) };
  });
  const files = input.streams.flatMap((s) => {
    const o = outcomes[s];
    return o?.ok ? [o.file] : [];
  });
  return {
    id: input.id,
    status: final?.status ?? 'running',
    format: input.format,
    gzip: input.gzip,
    requestedAt: input.requestedAt,
    ...(final ? { finishedAt: final.finishedAt } : {}),
    streams,
    progress: { streamsDone: Object.keys(outcomes).length, streamsTotal: input.streams.length },
    ...(final?.status === 'completed' ? { files, manifest: final.manifest } : {}),
    ...(final?.error ? { error: final.error } : {}),
  };
}

/**
 * One export: each stream's file written by its own activity (a few at once, none started after a failure),
 * then the manifest and the slot released, then the signed callback. Deterministic: time from the context.
 */
export function* exportOrchestrator(context: OrchestrationContext): Generator<Task, ExportState, unknown> {
  const input = exportInputSchema.parse(context.df.getInput());
  const outcomes: Record<string, StreamOutcome> = {};
  let state: ExportState;
  try {
    let pending = [...input.streams];
    let failures: string[] = [];
    while (pending.length && !failures.length) {
      const wave = pending.slice(0, EXPORT_CONCURRENCY);
      pending = pending.slice(EXPORT_CONCURRENCY);
      // Each stream of the wave slice by slice (ACTIVITY_SLICE_SECONDS each) until its file is written.
      let slices = wave.map((stream) => ({ stream, slice: 0 }));
      const going: Record<string, { records: number; slices: number }> = {};
      while (slices.length) {
        context.df.setCustomStatus(exportState(input, outcomes, wave, undefined, going));
        const out = (yield context.df.Task.all(
          slices.map(({ stream, slice }) =>
            context.df.callActivity(EXPORT.stream, {
              id: input.id,
              format: input.format,
              gzip: input.gzip,
              stream,
              slice,
            }),
          ),
        )) as StreamSlice[];
        slices = [];
        for (const o of out) {
          if ('more' in o) {
            going[o.stream] = { records: o.records, slices: o.slice + 1 };
            slices.push({ stream: o.stream, slice: o.slice + 1 });
          } else outcomes[o.ok ? o.file.stream : o.stream] = o;
        }
      }
      failures = wave.flatMap((s) => {
        const o = outcomes[s];
        return o && !o.ok ? [`${o.stream}: ${o.error}`] : [];
      });
    }
    const finishedAt = context.df.currentUtcDateTime.toISOString();
    const { manifest } = (yield context.df.callActivity(EXPORT.finish, {
      input,
      outcomes: input.streams.flatMap((s) => (outcomes[s] ? [outcomes[s]] : [])),
      finishedAt,
    })) as { manifest?: string };
    state = exportState(input, outcomes, [], {
      status: failures.length ? 'failed' : 'completed',
      finishedAt,
      manifest,
      error: failures.length ? `stream ${failures.join('; ')}` : undefined,
    });
  } catch (err) {
    // A stream activity or finish threw (storage, say): the export still ends — failed, its slot freed, in the
    // run history with its error — however far it got.
    const finishedAt = context.df.currentUtcDateTime.toISOString();
    const error = `the export could not finish: ${(err instanceof Error ? err.message : String(err)).slice(0, 2_000)}`;
    try {
      yield context.df.callActivity(EXPORT.fail, {
        input,
        outcomes: input.streams.flatMap((s) => (outcomes[s] ? [outcomes[s]] : [])),
        finishedAt,
        error,
      });
    } catch {
      // The history could not be written either: the next sweep (shared/runs/sweep.ts) accounts for it.
    }
    state = exportState(input, outcomes, [], { status: 'failed', finishedAt, error });
  }
  if (input.callbackUrl) {
    context.df.setCustomStatus({ ...state, callback: { status: 'pending' } });
    try {
      yield context.df.callActivity(EXPORT.notify, { state, callbackUrl: input.callbackUrl });
      state = { ...state, callback: { status: 'delivered' } };
    } catch (err) {
      state = { ...state, callback: { status: 'failed', error: (err as Error).message } };
    }
  }
  context.df.setCustomStatus(state);
  return state;
}
