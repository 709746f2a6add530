import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { exportStateSchema } from '../shared/exports/orchestration';
import { notifyExport } from '../shared/exports/run';

const inputSchema = z.object({ state: exportStateSchema, callbackUrl: z.string() });

/**
 * Activity: the signed callback. Download links are signed here and sent, never returned — so they stay out
 * of the durable history.
 */
df.app.activity('exportNotify', {
  handler: async (raw: unknown) => {
    const { state, callbackUrl } = inputSchema.parse(raw);
    await notifyExport(appContext().exports(), state, callbackUrl);
  },
});
