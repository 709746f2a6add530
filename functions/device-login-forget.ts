import * as df from 'durable-functions';
import { z } from 'zod';
import { DEVICE_LOGIN, forgetDeviceCode } from '../shared/auth/device-login';
import { appContext } from '../shared/app';

/** Activity: the login has ended (any way), so its device code leaves the secret store. */
df.app.activity(DEVICE_LOGIN.forget, {
  handler: async (input: unknown): Promise<void> => {
    await forgetDeviceCode(appContext().access().sessionSecrets, z.string().min(1).parse(input));
  },
});
