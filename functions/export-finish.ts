import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { EXPORT } from '../shared/exports/orchestration';
import { exportFinishActivity } from '../shared/exports/run';

/** Activity: the export's manifest (when every stream succeeded), and its slot freed for the next export. */
df.app.activity(EXPORT.finish, { handler: (input: unknown) => exportFinishActivity(appContext(), input) });
