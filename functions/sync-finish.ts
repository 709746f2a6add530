import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncFinishActivity } from '../shared/sync/activities';
import { SYNC } from '../shared/sync/orchestration';

/** Activity: the run's manifest to the sinks and its summary to the run history. */
df.app.activity(SYNC.finish, { handler: (input: unknown) => syncFinishActivity(appContext(), input) });
