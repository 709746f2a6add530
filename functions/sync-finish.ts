import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { finishInputSchema } from '../shared/sync/orchestration';
import { finishRun } from '../shared/sync/run';

/** Activity: the run's manifest to the sinks; a complete run clears its checkpoints, an incomplete one keeps them. */
df.app.activity('syncFinish', {
  handler: async (input: unknown) => {
    const { run, results } = finishInputSchema.parse(input);
    const app = appContext();
    const { context } = app.sync();
    const manifest = await finishRun(context, run, results);
    app.logger.log(manifest.ok ? 'info' : 'warn', manifest.ok ? 'sync run completed' : 'sync run failed', {
      runId: run.runId,
      tenant: context.tenant,
      count: results.filter((r) => !r.ok).length,
    });
    return { ok: manifest.ok, runId: manifest.runId, error: manifest.error };
  },
});
