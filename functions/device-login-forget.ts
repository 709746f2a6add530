import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { DEVICE_LOGIN, forgetActivity } from '../shared/device-login/orchestration';

/** Activity: the login has ended (any way), so its device code leaves the secret store. */
df.app.activity(DEVICE_LOGIN.forget, {
  handler: (input: unknown) => forgetActivity(appContext().access(), z.string().min(1).parse(input)),
});
