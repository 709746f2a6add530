import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { bodyOf, findLogin, loginStatusUrl } from '../shared/auth/device-login-http';

/** GET /api/manage/device-login/{id} (admin key): state, and the code, link and QR code while waiting. */
df.app.client.http('deviceLoginStatus', {
  route: 'manage/device-login/{id}',
  methods: ['GET'],
  authLevel: 'admin',
  handler: async (request: HttpRequest, client: DurableClient) => {
    const found = await findLogin(request, client);
    if ('response' in found) return found.response;
    return { jsonBody: await bodyOf(found.status, loginStatusUrl(request, found.id)) };
  },
});
