import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import {
  EXPORT,
  EXPORT_CONCURRENCY,
  exportInputSchema,
  exportState,
  type ExportState,
  type StreamOutcome,
} from '../shared/exports/orchestration';

/**
 * One export: each stream's file written by its own activity (a few at once, none started after a failure),
 * then the manifest and the slot released, then the signed callback. Deterministic: time from the context.
 */
export function* exportOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const input = exportInputSchema.parse(context.df.getInput());
  const outcomes: Record<string, StreamOutcome> = {};
  let pending = [...input.streams];
  let failures: string[] = [];
  while (pending.length && !failures.length) {
    const wave = pending.slice(0, EXPORT_CONCURRENCY);
    pending = pending.slice(EXPORT_CONCURRENCY);
    context.df.setCustomStatus(exportState(input, outcomes, wave));
    const out = (yield context.df.Task.all(
      wave.map((stream) =>
        context.df.callActivity(EXPORT.stream, {
          id: input.id,
          format: input.format,
          gzip: input.gzip,
          stream,
        }),
      ),
    )) as StreamOutcome[];
    for (const o of out) outcomes[o.ok ? o.file.stream : o.stream] = o;
    failures = out.flatMap((o) => (o.ok ? [] : [`${o.stream}: ${o.error}`]));
  }
  const finishedAt = context.df.currentUtcDateTime.toISOString();
  let state: ExportState;
  try {
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
    state = exportState(input, outcomes, [], {
      status: 'failed',
      finishedAt,
      error: `the manifest could not be written: ${(err as Error).message}`,
    });
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

df.app.orchestration(EXPORT.orchestrator, exportOrchestrator);
