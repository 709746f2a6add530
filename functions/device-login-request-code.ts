import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { requestCodeActivity } from '../shared/device-login/activities';
import { DEVICE_LOGIN } from '../shared/device-login/orchestration';

/** Activity: a device code, kept in the session secret store; the orchestration gets a ticket. */
df.app.activity(DEVICE_LOGIN.requestCode, {
  handler: (input: unknown) => requestCodeActivity(appContext(), input),
});
