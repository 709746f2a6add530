import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { IMPORT } from '../shared/imports/orchestration';
import { importSessionActivity } from '../shared/imports/run';

/** Activity: Whether an admin's session is there again (a waiting import's check). */
df.app.activity(IMPORT.session, { handler: (input: unknown) => importSessionActivity(appContext(), input) });
