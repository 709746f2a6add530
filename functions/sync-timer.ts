import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import type { InvocationContext, Timer } from '@azure/functions';
import { appContext } from '../shared/app';
import { isRunning, readInstance } from '../shared/durable';
import { SYNC, syncInstanceId } from '../shared/sync/orchestration';

/** SYNC_SCHEDULE → the sync orchestration, one per tenant: a tick while a run is going is skipped and logged. */
df.app.client.timer('syncTimer', {
  schedule: '%SYNC_SCHEDULE%',
  runOnStartup: false,
  handler: async (_timer: Timer, client: DurableClient, context: InvocationContext) => {
    const id = syncInstanceId(appContext().access().tenant.name);
    const existing = await readInstance(client, id);
    if (existing && isRunning(existing.runtimeStatus)) {
      context.log(`sync tick skipped: run ${id} is still ${existing.runtimeStatus}`);
      return;
    }
    await client.startNew(SYNC.orchestrator, { instanceId: id, input: {} });
    context.log(`sync run started: ${id}`);
  },
});
