import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { pollActivity } from '../shared/device-login/activities';
import { DEVICE_LOGIN } from '../shared/device-login/orchestration';

/** Activity: one poll with the ticket's device code; on success the session is stored, never returned. */
df.app.activity(DEVICE_LOGIN.poll, {
  handler: (input: unknown) => pollActivity(appContext(), input),
});
