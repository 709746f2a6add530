import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncFailActivity } from '../shared/sync/activities';
import { SYNC } from '../shared/sync/orchestration';

/** Activity: a run that ended without its manifest, recorded as failed with its error and the action that fixes it. */
df.app.activity(SYNC.fail, { handler: (input: unknown) => syncFailActivity(appContext(), input) });
