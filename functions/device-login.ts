import type { HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { appContext, httpDoor } from '../shared/app';
import { forgetActivity, pollActivity, requestCodeActivity } from '../shared/device-login/activities';
import {
  DEVICE_LOGIN,
  deviceLoginInstanceId,
  deviceLoginOrchestrator,
} from '../shared/device-login/orchestration';
import { cancelLogin, loginStatus, startLogin } from '../shared/device-login/routes';

/**
 * The admins' device login (shared/device-login/): its three routes, its orchestration and its three activities.
 *
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

/** GET /api/manage/device-login/{id} (admin key): state, and the code, link and QR code while waiting. */
df.app.client.http('deviceLoginStatus', {
  route: 'manage/device-login/{id}',
  methods: ['GET'],
  authLevel: 'admin',
  handler: httpDoor('device login status', (request: HttpRequest, client: DurableClient) =>
    loginStatus(request, client),
  ),
});

/** POST /api/manage/device-login/{id}/cancel (admin key): ends the polling at once. */
df.app.client.http('deviceLoginCancel', {
  route: 'manage/device-login/{id}/cancel',
  methods: ['POST'],
  authLevel: 'admin',
  handler: httpDoor('device login cancel', (request: HttpRequest, client: DurableClient) =>
    cancelLogin(request, client),
  ),
});

/** The device-flow poll loop on durable timers. */
df.app.orchestration(DEVICE_LOGIN.orchestrator, deviceLoginOrchestrator);

/** A device code, kept in the session secret store; the orchestration gets a ticket. */
df.app.activity(DEVICE_LOGIN.requestCode, {
  handler: (input: unknown) => requestCodeActivity(appContext(), input),
});

/** One poll with the ticket's device code; on success the session is stored, never returned. */
df.app.activity(DEVICE_LOGIN.poll, { handler: (input: unknown) => pollActivity(appContext(), input) });

/** The login has ended (any way): its device code leaves the secret store; it ends in the run history. */
df.app.activity(DEVICE_LOGIN.forget, { handler: (input: unknown) => forgetActivity(appContext(), input) });
