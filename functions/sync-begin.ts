import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncSummary } from '../shared/runs/summary';
import { runInputSchema, type SyncPlan } from '../shared/sync/orchestration';
import { beginRun } from '../shared/sync/run';

/** Activity: the run to work on — the unfinished one (resumed under its id) or a new one — and its streams. */
df.app.activity('syncBegin', {
  handler: async (input: unknown): Promise<SyncPlan> => {
    const { full, trigger } = runInputSchema.parse(input);
    const app = appContext();
    const sync = app.sync();
    const run = await beginRun(sync.context, { full });
    app.logger.log('info', run.resumed ? 'sync run resumed' : 'sync run started', {
      runId: run.runId,
      tenant: sync.context.tenant,
    });
    const summary = syncSummary(run, [], {
      trigger: run.resumed ? 'resumed' : trigger,
      sinks: sync.context.sink.description,
    });
    await app.runs().save(summary);
    return { ...run, trigger, streams: sync.streams.map((s) => s.name), concurrency: sync.concurrency };
  },
});
