import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { durableCall, ended, isRunning, readInstance, waitForInstance } from '../durable';
import type { Clock } from '../clock';
import { problem } from '../errors';
import { DEVICE_LOGIN, type DeviceLoginView } from './orchestration';

/** How long POST /api/manage/device-login waits for the user code before answering 202 without it. */
const WAIT_FOR_CODE_MS = 10_000;

/** Our status body for a device-login instance: never the durable system URLs, never a token. */
export interface DeviceLoginBody {
  id: string;
  /** This login attempt's id in the run history. */
  runId?: string;
  state: DeviceLoginView['state'];
  userCode?: string;
  verificationUri?: string;
  verificationUriComplete?: string;
  expiresAt?: string;
  intervalSeconds?: number;
  username?: string;
  name?: string;
  error?: string;
  qrSvg?: string;
  createdAt: string;
  updatedAt: string;
  statusUrl: string;
}

export const LOGIN_ID = /^device-login-[a-z0-9-]{1,80}$/;

/** Our status route for a login (never the durable system URLs). */
export const loginStatusUrl = (request: HttpRequest, id: string) =>
  `${new URL(request.url).origin}/api/manage/device-login/${id}`;

/** The `{id}` of a route, checked and looked up: the login, or the 400/404 to answer. */
export async function findLogin(
  request: HttpRequest,
  client: DurableClient,
): Promise<{ id: string; status: DurableOrchestrationStatus } | { response: HttpResponseInit }> {
  const id = request.params.id;
  if (!LOGIN_ID.test(id))
    return { response: problem(400, 'invalid_request', 'id must look like device-login-<tenant>') };
  const status = await readInstance(client, id);
  if (!status) return { response: problem(404, 'not_found', `no device login ${id}`) };
  return { id, status };
}

export async function loginBody(
  status: {
    instanceId?: string;
    runtimeStatus: string;
    customStatus?: unknown;
    createdTime: Date;
    lastUpdatedTime: Date;
  },
  statusUrl: string,
): Promise<DeviceLoginBody> {
  let view = (status.customStatus ?? { state: 'starting' }) as DeviceLoginView;
  if (status.runtimeStatus === 'Terminated')
    view = { state: 'cancelled', polls: 'polls' in view ? view.polls : 0 };
  if (status.runtimeStatus === 'Failed')
    view = { state: 'failed', error: 'the login orchestration failed; see the app logs', polls: 0 };
  const body: DeviceLoginBody = {
    id: String(status.instanceId),
    ...view,
    createdAt: new Date(status.createdTime).toISOString(),
    updatedAt: new Date(status.lastUpdatedTime).toISOString(),
    statusUrl,
  };
  delete (body as { polls?: number }).polls;
  if (view.state === 'waiting') {
    // Loaded on first use: only the admin page's device login draws a QR code (cold start, issue #19).
    const QRCode = (await import('qrcode')).default;
    body.qrSvg = await QRCode.toString(view.verificationUriComplete, { type: 'svg', margin: 1 });
  }
  return body;
}

/**
 * POST /api/manage/device-login[?force=true]: starts this tenant's device login and answers 202 with the user code
 * and link once the orchestration has them. One per tenant: 409 while one runs, unless `force` replaces it.
 */
export async function startLogin(
  request: HttpRequest,
  client: DurableClient,
  id: string,
  clock: Clock,
): Promise<HttpResponseInit> {
  const force = request.query.get('force');
  if (force !== null && force !== 'true' && force !== 'false')
    return problem(400, 'invalid_request', 'force must be true or false');
  const statusUrl = loginStatusUrl(request, id);
  const existing = await readInstance(client, id);
  if (existing && isRunning(existing.runtimeStatus)) {
    if (force !== 'true') {
      const login = await loginBody(existing, statusUrl);
      // It runs until its code expires at the latest: then a new one can start.
      const untilExpiry = login.expiresAt ? (Date.parse(login.expiresAt) - clock.now()) / 1000 : undefined;
      return problem(
        409,
        'device_login_running',
        `a device login is already running${login.expiresAt ? ` until its code expires at ${login.expiresAt}` : ''}; add ?force=true to replace it`,
        {
          members: { login },
          ...(untilExpiry !== undefined && untilExpiry > 0
            ? { retryAfterSeconds: Math.min(untilExpiry, 600) }
            : {}),
        },
      );
    }
    // Cancelled rather than terminated, so it ends its own way and forgets its device code; terminated only if
    // it has not ended within 5 s.
    await durableCall('take the cancel', () =>
      client.raiseEvent(id, DEVICE_LOGIN.cancelEvent, { reason: 'replaced by a new device login' }),
    );
    if (!ended(await waitForInstance(client, id, ended, 5_000))) {
      await durableCall('terminate the login', () => client.terminate(id, 'replaced by a new device login'));
      await waitForInstance(client, id, ended, 5_000);
    }
  }
  await durableCall('start the login', () =>
    client.startNew(DEVICE_LOGIN.orchestrator, { instanceId: id, input: {} }),
  );
  const status = await waitForInstance(
    client,
    id,
    (s) => !s || ended(s) || (s.customStatus as { state?: string } | undefined)?.state === 'waiting',
    WAIT_FOR_CODE_MS,
    100,
  );
  return {
    status: 202,
    jsonBody: status ? await loginBody(status, statusUrl) : { id, state: 'starting', statusUrl },
    headers: { location: statusUrl, 'retry-after': '5' },
  };
}

/** GET /api/manage/device-login/{id}: state, and the code, link and QR code while waiting. */
export async function loginStatus(request: HttpRequest, client: DurableClient): Promise<HttpResponseInit> {
  const found = await findLogin(request, client);
  if ('response' in found) return found.response;
  return { jsonBody: await loginBody(found.status, loginStatusUrl(request, found.id)) };
}

/**
 * POST /api/manage/device-login/{id}/cancel: ends the polling at once (202). A login that has already ended is not
 * running, which is what a cancel asks for: 200 with its state, so a second click or a retry is never an error.
 */
export async function cancelLogin(request: HttpRequest, client: DurableClient): Promise<HttpResponseInit> {
  const found = await findLogin(request, client);
  if ('response' in found) return found.response;
  const statusUrl = loginStatusUrl(request, found.id);
  if (!isRunning(found.status.runtimeStatus))
    return {
      status: 200,
      jsonBody: await loginBody(found.status, statusUrl),
      headers: { location: statusUrl },
    };
  await durableCall('take the cancel', () => client.raiseEvent(found.id, DEVICE_LOGIN.cancelEvent, {}));
  return { status: 202, headers: { location: statusUrl } };
}
