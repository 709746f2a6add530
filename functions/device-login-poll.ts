import * as df from 'durable-functions';
import { z } from 'zod';
import { pollDeviceToken } from '../shared/auth/device-http';
import { DEVICE_LOGIN, readDeviceCode, type PollResult } from '../shared/auth/device-login';
import { tenantEndpoints } from '../shared/auth/endpoints';
import { appContext } from '../shared/app';

/**
 * Activity: one poll, given the ticket's handle (the device code is read from the secret store). On success
 * the tokens go straight into the delegated session (refresh token to the secret store); the orchestrator
 * only learns who logged in.
 */
df.app.activity(DEVICE_LOGIN.poll, {
  handler: async (input: unknown): Promise<PollResult> => {
    const handle = z.string().min(1).parse(input);
    const access = appContext().access();
    const deviceCode = await readDeviceCode(access.sessionSecrets, handle);
    const { outcome, tokens } = await pollDeviceToken(tenantEndpoints(access.tenant), deviceCode);
    if (!tokens) return { outcome };
    const session = await access.delegated.connect(tokens);
    return { outcome, person: { username: session.username, name: session.name } };
  },
});
