import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { IMPORT } from '../shared/imports/orchestration';
import { importWaitingActivity } from '../shared/imports/run';

/** Activity: The import waits for an admin: the alert's record and the run history. */
df.app.activity(IMPORT.waiting, { handler: (input: unknown) => importWaitingActivity(appContext(), input) });
