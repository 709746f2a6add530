import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncSummary } from '../shared/runs/summary';
import { finishInputSchema } from '../shared/sync/orchestration';
import { finishRun } from '../shared/sync/run';

/** Activity: the run's manifest to the sinks and its summary to the run history; a complete run clears its checkpoints. */
df.app.activity('syncFinish', {
  handler: async (input: unknown) => {
    const { run, results, trigger } = finishInputSchema.parse(input);
    const app = appContext();
    const { context } = app.sync();
    const manifest = await finishRun(context, run, results);
    const summary = syncSummary(run, results, {
      trigger,
      finishedAt: manifest.finishedAt,
      sinks: context.sink.description,
      ...(manifest.error ? { error: { code: 'sink_failed', message: manifest.error } } : {}),
    });
    // The alert rules in infra/ read these records: their message and fields are part of the contract.
    app.logger.log(manifest.ok ? 'info' : 'warn', manifest.ok ? 'sync run completed' : 'sync run failed', {
      runId: run.runId,
      tenant: context.tenant,
      count: results.filter((r) => !r.ok).length,
      code: summary.error?.code,
    });
    await app.runs().save(summary);
    return { ok: manifest.ok, runId: manifest.runId, error: manifest.error };
  },
});
