import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { IMPORT } from '../shared/imports/orchestration';
import { importNotifyActivity } from '../shared/imports/run';

/** Activity: The import's signed callback. */
df.app.activity(IMPORT.notify, { handler: (input: unknown) => importNotifyActivity(appContext(), input) });
