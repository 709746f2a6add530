import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { SLICE_SECONDS, sliceInputSchema } from '../shared/sync/orchestration';
import { noCounts } from '../shared/sync/counts';
import { syncStream, type StreamResult } from '../shared/sync/run';

/** Activity: one stream's pass from its checkpoint, for up to SLICE_SECONDS; the orchestrator calls again if not done. */
df.app.activity('syncStreamSlice', {
  handler: async (input: unknown): Promise<StreamResult> => {
    const { run, stream } = sliceInputSchema.parse(input);
    const app = appContext();
    const sync = app.sync();
    const definition = sync.streams.find((s) => s.name === stream);
    if (!definition)
      return {
        stream,
        ok: false,
        done: false,
        counts: noCounts(),
        error: `stream ${stream} is no longer configured`,
        errorCode: 'config_invalid',
      };
    const started = app.clock.now();
    const result = await syncStream(app.access().graphql, definition, run, sync.context, {
      deadlineMs: started + SLICE_SECONDS * 1000,
    });
    return { ...result, durationMs: Math.max(0, Math.round(app.clock.now() - started)) };
  },
});
