import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { cancelLogin } from '../shared/device-login/routes';
import { httpDoor } from '../shared/app';

/** POST /api/manage/device-login/{id}/cancel (admin key): ends the polling at once. */
df.app.client.http('deviceLoginCancel', {
  route: 'manage/device-login/{id}/cancel',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('device login cancel', (request: HttpRequest, client: DurableClient) =>
    cancelLogin(request, client),
  ),
});
