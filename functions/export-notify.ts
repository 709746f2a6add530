import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { EXPORT } from '../shared/exports/orchestration';
import { exportNotifyActivity } from '../shared/exports/run';

/** Activity: the signed callback (links signed here and sent, never returned into the durable history). */
df.app.activity(EXPORT.notify, { handler: (input: unknown) => exportNotifyActivity(appContext(), input) });
