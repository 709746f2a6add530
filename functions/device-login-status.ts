import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { loginStatus } from '../shared/device-login/routes';
import { httpDoor } from '../shared/app';

/** GET /api/manage/device-login/{id} (admin key): state, and the code, link and QR code while waiting. */
df.app.client.http('deviceLoginStatus', {
  route: 'manage/device-login/{id}',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('device login status', (request: HttpRequest, client: DurableClient) =>
    loginStatus(request, client),
  ),
});
