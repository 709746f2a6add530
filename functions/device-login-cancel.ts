import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { DEVICE_LOGIN } from '../shared/auth/device-login';
import { isRunning, readInstance } from '../shared/auth/device-login-http';
import { LOGIN_ID } from './device-login-status';

/** POST /api/manage/device-login/{id}/cancel (admin key): ends the polling at once. */
df.app.client.http('deviceLoginCancel', {
  route: 'manage/device-login/{id}/cancel',
  methods: ['POST'],
  authLevel: 'admin',
  handler: async (request: HttpRequest, client: DurableClient) => {
    const id = request.params.id;
    if (!LOGIN_ID.test(id))
      return {
        status: 400,
        jsonBody: { error: 'invalid_request', message: 'id must look like device-login-<tenant>' },
      };
    const status = await readInstance(client, id);
    if (!status) return { status: 404, jsonBody: { error: 'not_found', message: `no device login ${id}` } };
    if (!isRunning(status.runtimeStatus))
      return {
        status: 409,
        jsonBody: {
          error: 'conflict',
          message: `the device login has already ended (${status.runtimeStatus})`,
        },
      };
    await client.raiseEvent(id, DEVICE_LOGIN.cancelEvent, {});
    return {
      status: 202,
      headers: { location: `${new URL(request.url).origin}/api/manage/device-login/${id}` },
    };
  },
});
