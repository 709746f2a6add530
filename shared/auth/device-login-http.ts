import type { DurableClient } from 'durable-functions';
import QRCode from 'qrcode';
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

const RUNNING = ['Pending', 'Running', 'ContinuedAsNew'];

export async function readInstance(client: DurableClient, id: string) {
  try {
    return await client.getStatus(id);
  } catch (err) {
    if (/404/.test((err as Error).message)) return undefined;
    throw err;
  }
}

export const isRunning = (runtimeStatus: string) => RUNNING.includes(runtimeStatus);

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
  if (view.state === 'waiting')
    body.qrSvg = await QRCode.toString(view.verificationUriComplete, { type: 'svg', margin: 1 });
  return body;
}
