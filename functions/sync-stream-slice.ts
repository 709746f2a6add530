import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { SLICE_SECONDS, sliceInputSchema } from '../shared/sync/orchestration';
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
        counts: { read: 0, created: 0, updated: 0, deleted: 0, unchanged: 0 },
        error: `stream ${stream} is no longer configured`,
        errorCode: 'CONFIG_INVALID',
      };
    const { tenant, graphql } = app.access();
    return syncStream(
      graphql,
      definition,
      run,
      { tenant: tenant.name, state: sync.state, sink: sync.sink, clock: app.clock, logger: app.logger },
      { deadlineMs: app.clock.now() + SLICE_SECONDS * 1000 },
    );
  },
});
