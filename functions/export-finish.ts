import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { exportInputSchema, streamOutcomeSchema } from '../shared/exports/orchestration';
import { finishExport } from '../shared/exports/run';

const inputSchema = z.object({
  input: exportInputSchema,
  outcomes: z.array(streamOutcomeSchema),
  finishedAt: z.string(),
});

/** Activity: the export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity('exportFinish', {
  handler: (raw: unknown) => {
    const { input, outcomes, finishedAt } = inputSchema.parse(raw);
    return finishExport(appContext().exports(), input, outcomes, finishedAt);
  },
});
