import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { syncBeginActivity } from '../shared/sync/activities';
import { SYNC } from '../shared/sync/orchestration';

/** Activity: the run to work on — the unfinished one (resumed under its id) or a new one — and its streams. */
df.app.activity(SYNC.begin, { handler: (input: unknown) => syncBeginActivity(appContext(), input) });
