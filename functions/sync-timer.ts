import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import type { InvocationContext, Timer } from '@azure/functions';
import { appContext } from '../shared/app';
import { startSyncRun } from '../shared/sync/start';

/**
 * SYNC_SCHEDULE → the sync orchestration, one per tenant: a tick while a run is going is skipped and logged. Before
 * a run starts, runs whose orchestration stopped without ending them are recorded as failed.
 */
df.app.client.timer('syncTimer', {
  schedule: '%SYNC_SCHEDULE%',
  runOnStartup: false,
  handler: async (_timer: Timer, client: DurableClient, context: InvocationContext) => {
    const outcome = await startSyncRun(client, appContext(), 'schedule');
    if (!outcome.started)
      context.log(`sync tick skipped: a run is still ${outcome.running?.runtimeStatus ?? 'starting'}`);
  },
});
