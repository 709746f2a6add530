import * as df from 'durable-functions';
import { z } from 'zod';
import { appContext } from '../shared/app';
import { DEVICE_LOGIN, pollActivity } from '../shared/device-login/orchestration';

/** Activity: one poll with the ticket's device code; on success the session is stored, never returned. */
df.app.activity(DEVICE_LOGIN.poll, {
  handler: (input: unknown) => pollActivity(appContext().access(), z.string().min(1).parse(input)),
});
