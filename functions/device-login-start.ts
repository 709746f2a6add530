import { HttpResponse, type HttpRequest } from '@azure/functions';
import * as df from 'durable-functions';
import type { DurableClient } from 'durable-functions';
import { DEVICE_LOGIN, deviceLoginInstanceId } from '../shared/auth/device-login';
import { bodyOf, loginStatusUrl } from '../shared/auth/device-login-http';
import { isRunning, readInstance } from '../shared/durable';
import { appContext } from '../shared/app';
import { problem } from '../shared/errors';
import { sleep } from '../shared/net/retry';

const WAIT_FOR_CODE_MS = 10_000;

/**
 * POST /api/manage/device-login[?force=true] (admin key): starts the device login for this tenant and answers
 * 202 with the user code and link once the orchestration has them. One per tenant: 409 while one runs.
 */
df.app.client.http('deviceLoginStart', {
  route: 'manage/device-login',
  methods: ['POST'],
  authLevel: 'admin',
  handler: async (request: HttpRequest, client: DurableClient) => {
    const force = request.query.get('force');
    if (force !== null && force !== 'true' && force !== 'false') {
      return problem(400, 'invalid_request', 'force must be true or false');
    }
    const id = deviceLoginInstanceId(appContext().access().tenant.name);
    const statusUrl = loginStatusUrl(request, id);
    const existing = await readInstance(client, id);
    if (existing && isRunning(existing.runtimeStatus)) {
      if (force !== 'true') {
        return problem(
          409,
          'device_login_running',
          'a device login is already running; add ?force=true to replace it',
          {
            members: { login: await bodyOf(existing, statusUrl) },
          },
        );
      }
      // Cancelled rather than terminated, so it ends its own way and forgets its device code; terminated
      // only if it has not ended within 5 s.
      await client.raiseEvent(id, DEVICE_LOGIN.cancelEvent, { reason: 'replaced by a new device login' });
      const ended = async () => !isRunning((await readInstance(client, id))?.runtimeStatus ?? '');
      for (let i = 0; i < 100 && !(await ended()); i++) await sleep(50);
      if (!(await ended())) {
        await client.terminate(id, 'replaced by a new device login');
        for (let i = 0; i < 100 && !(await ended()); i++) await sleep(50);
      }
    }
    await client.startNew(DEVICE_LOGIN.orchestrator, { instanceId: id, input: {} });
    let status = await readInstance(client, id);
    for (
      let waited = 0;
      waited < WAIT_FOR_CODE_MS &&
      status &&
      (status.customStatus as { state?: string } | undefined)?.state !== 'waiting' &&
      isRunning(status.runtimeStatus);
      waited += 100
    ) {
      await sleep(100);
      status = await readInstance(client, id);
    }
    const body = status ? await bodyOf(status, statusUrl) : undefined;
    return new HttpResponse({
      status: 202,
      jsonBody: body ?? { id, state: 'starting', statusUrl },
      headers: { location: statusUrl, 'retry-after': '5' },
    });
  },
});
