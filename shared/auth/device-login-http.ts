import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { readInstance } from '../durable';
import { problem } from '../errors';
import type { DeviceLoginView } from './device-login';

/** Our status body for a device-login instance: never the durable system URLs, never a token. */
export interface DeviceLoginBody {
  id: string;
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

export async function bodyOf(
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
