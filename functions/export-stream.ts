import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { EXPORT } from '../shared/exports/orchestration';
import { exportStreamActivity } from '../shared/exports/run';

/** Activity: one stream of an export to its blob, streaming; the outcome (file or error) for the manifest. */
df.app.activity(EXPORT.stream, { handler: (input: unknown) => exportStreamActivity(appContext(), input) });
