import type { HttpRequest, InvocationContext, Timer } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import {
  syncBeginActivity,
  syncFailActivity,
  syncFinishActivity,
  syncSliceActivity,
} from '../shared/sync/activities';
import { SYNC, syncOrchestrator } from '../shared/sync/orchestration';
import { startSync, startSyncRun } from '../shared/sync/routes';

/**
 * The sync (shared/sync/): its two triggers, its orchestration and its four activities.
 *
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

/** POST /api/manage/sync (admin key): start a sync now; 409 with the running one if one is running. */
df.app.client.http('manageSync', {
  route: 'manage/sync',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('sync', (_request: HttpRequest, client: DurableClient) =>
    startSync(client, appContext()),
  ),
});

/** One sync run: plan, slices of each stream, manifest. */
df.app.orchestration(SYNC.orchestrator, syncOrchestrator);

/** The run to work on — the unfinished one (resumed under its id) or a new one — and its streams. */
df.app.activity(SYNC.begin, { handler: (input: unknown) => syncBeginActivity(appContext(), input) });

/** One stream's pass from its checkpoint, for up to ACTIVITY_SLICE_SECONDS; called again if not done. */
df.app.activity(SYNC.slice, { handler: (input: unknown) => syncSliceActivity(appContext(), input) });

/** The run's manifest to the sinks and its summary to the run history. */
df.app.activity(SYNC.finish, { handler: (input: unknown) => syncFinishActivity(appContext(), input) });

/** A run that ended without its manifest, recorded as failed with its error and the action that fixes it. */
df.app.activity(SYNC.fail, { handler: (input: unknown) => syncFailActivity(appContext(), input) });
