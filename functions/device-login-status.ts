import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { bodyOf, readInstance } from '../shared/auth/device-login-http';

export const LOGIN_ID = /^device-login-[a-z0-9-]{1,80}$/;

/** GET /api/manage/device-login/{id} (admin key): state, and the code, link and QR code while waiting. */
df.app.client.http('deviceLoginStatus', {
  route: 'manage/device-login/{id}',
  methods: ['GET'],
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
    return { jsonBody: await bodyOf(status, `${new URL(request.url).origin}/api/manage/device-login/${id}`) };
  },
});
