import * as df from 'durable-functions';
import { appContext } from '../shared/app';
import { endActivity } from '../shared/device-login/activities';
import { DEVICE_LOGIN } from '../shared/device-login/orchestration';

/** Activity: the login has ended (any way): its device code leaves the secret store; it ends in the run history. */
df.app.activity(DEVICE_LOGIN.forget, {
  handler: (input: unknown) => endActivity(appContext(), input),
});
