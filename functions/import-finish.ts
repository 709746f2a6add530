import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { IMPORT } from '../shared/imports/orchestration';
import { importFinishActivity } from '../shared/imports/run';

/** Activity: The import's end: items never sent skipped, the summary in the run history. */
df.app.activity(IMPORT.finish, { handler: (input: unknown) => importFinishActivity(appContext(), input) });
