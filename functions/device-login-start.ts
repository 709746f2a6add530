import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { deviceLoginInstanceId } from '../shared/device-login/orchestration';
import { startLogin } from '../shared/device-login/routes';

/**
 * POST /api/manage/device-login[?force=true] (admin key): starts the device login for this tenant and answers
 * 202 with the user code and link once the orchestration has them. One per tenant: 409 while one runs.
 */
df.app.client.http('deviceLoginStart', {
  route: 'manage/device-login',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('device login', (request: HttpRequest, client: DurableClient) => {
    const app = appContext();
    return startLogin(request, client, deviceLoginInstanceId(app.access().tenant.name), app.clock);
  }),
});
