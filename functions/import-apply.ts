import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { IMPORT } from '../shared/imports/orchestration';
import { importApplyActivity } from '../shared/imports/run';

/** Activity: A share of the import's items applied with the admin's session. */
df.app.activity(IMPORT.apply, { handler: (input: unknown) => importApplyActivity(appContext(), input) });
