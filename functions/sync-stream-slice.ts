import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncSliceActivity } from '../shared/sync/activities';
import { SYNC } from '../shared/sync/orchestration';

/** Activity: one stream's pass from its checkpoint, for up to SLICE_SECONDS; called again if not done. */
df.app.activity(SYNC.stream, { handler: (input: unknown) => syncSliceActivity(appContext(), input) });
