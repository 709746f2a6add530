import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { EXPORT } from '../shared/exports/orchestration';
import { finishActivity } from '../shared/exports/run';

/** Activity: the export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity(EXPORT.finish, { handler: (input: unknown) => finishActivity(appContext(), input) });
