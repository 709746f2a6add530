import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { EXPORT } from '../shared/exports/orchestration';
import { exportFailActivity } from '../shared/exports/run';

/** Activity: an export that could not finish — its slot freed and its summary failed, with why. */
df.app.activity(EXPORT.fail, { handler: (input: unknown) => exportFailActivity(appContext(), input) });
