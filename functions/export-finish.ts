import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { exportInputSchema, streamOutcomeSchema } from '../shared/exports/orchestration';
import { finishExport } from '../shared/exports/run';
import { exportSummary } from '../shared/runs/summary';

const inputSchema = z.object({
  input: exportInputSchema,
  outcomes: z.array(streamOutcomeSchema),
  finishedAt: z.string(),
});

/** Activity: the export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity('exportFinish', {
  handler: async (raw: unknown) => {
    const { input, outcomes, finishedAt } = inputSchema.parse(raw);
    const app = appContext();
    const out = await finishExport(app.exports(), input, outcomes, finishedAt);
    const summary = exportSummary(input, outcomes, finishedAt);
    if (summary.outcome === 'failed')
      // An alert rule in infra/ reads this record: its message and fields are part of the contract.
      app.logger.log('warn', 'export failed', {
        runId: input.id,
        tenant: input.tenant,
        code: 'export_failed',
      });
    await app.runs().save(summary);
    return out;
  },
});
