import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { DEVICE_LOGIN } from '../shared/auth/device-login';
import { findLogin, loginStatusUrl } from '../shared/auth/device-login-http';
import { isRunning } from '../shared/durable';
import { problem } from '../shared/errors';

/** POST /api/manage/device-login/{id}/cancel (admin key): ends the polling at once. */
df.app.client.http('deviceLoginCancel', {
  route: 'manage/device-login/{id}/cancel',
  methods: ['POST'],
  authLevel: 'admin',
  handler: async (request: HttpRequest, client: DurableClient) => {
    const found = await findLogin(request, client);
    if ('response' in found) return found.response;
    if (!isRunning(found.status.runtimeStatus))
      return problem(
        409,
        'device_login_ended',
        `the device login has already ended (${found.status.runtimeStatus})`,
      );
    await client.raiseEvent(found.id, DEVICE_LOGIN.cancelEvent, {});
    return { status: 202, headers: { location: loginStatusUrl(request, found.id) } };
  },
});
