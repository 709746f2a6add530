import type { DurableClient, DurableOrchestrationStatus } from 'durable-functions';
import { z } from 'zod';
import { IntegrationError } from './errors';
import { sleep, withTimeout } from './net/retry';

const RUNNING = ['Pending', 'Running', 'ContinuedAsNew'];

export const isRunning = (runtimeStatus: string) => RUNNING.includes(runtimeStatus);

/** No instance, or one that has ended (completed, failed, terminated). */
export const ended = (s: DurableOrchestrationStatus | undefined) => !isRunning(s?.runtimeStatus ?? '');

/**
 * Reads the instance until `done` says so or `ms` have passed (bounded by reads, not by a clock a test may freeze);
 * answers the last status read.
 */
export async function waitForInstance(
  client: DurableClient,
  id: string,
  done: (status: DurableOrchestrationStatus | undefined) => boolean,
  ms: number,
  stepMs = 50,
): Promise<DurableOrchestrationStatus | undefined> {
  let status = await readInstance(client, id);
  for (let waited = 0; waited < ms && !done(status); waited += stepMs) {
    await sleep(stepMs);
    status = await readInstance(client, id);
  }
  return status;
}

/**
 * A call to the durable store through the client (start, raise an event, terminate). The library throws plain
 * Errors whatever went wrong — the extension down, its storage refusing, an unexpected status — so they are named
 * here as the durable store not answering (`service_unavailable`, the cause kept): a route answers 503 and the
 * caller retries.
 */
export async function durableCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof IntegrationError) throw err;
    throw new IntegrationError('service_unavailable', `the durable store did not ${what}`, { cause: err });
  }
}

/** The binding data a durable client is built from (local-host.md in shared/notes: the same in Azure). */
interface ClientData {
  rpcBaseUrl?: string;
  managementUrls?: { id: string; statusQueryGetUri: string };
}

/**
 * An instance's status for starters, read by the HTTP status the Durable Functions extension answers: 404 is "no
 * such instance" (`undefined`), 200/202 a status, anything else an error naming the status. The library's own
 * `getStatus` turns a 404 into an Error whose message is the only way to tell it from other failures, so the
 * request is made here, to the same address the library uses (the worker's RPC endpoint, else the status URL).
 * It gives up after `timeoutMs` (default 30 s) whether or not the caller passes a signal of its own.
 */
export async function readInstance(
  client: DurableClient,
  id: string,
  options: { abortSignal?: AbortSignal; timeoutMs?: number } = {},
): Promise<DurableOrchestrationStatus | undefined> {
  const data = (client as unknown as { clientData?: ClientData }).clientData;
  const url = data?.rpcBaseUrl
    ? new URL(`instances/${encodeURIComponent(id)}`, data.rpcBaseUrl).href
    : data?.managementUrls?.statusQueryGetUri.replace(data.managementUrls.id, encodeURIComponent(id));
  if (!url)
    throw new Error('the durable client has no status address (binding data without rpcBaseUrl or URLs)');
  const read = () =>
    withTimeout(options.timeoutMs ?? 30_000, options.abortSignal, async (signal) => {
      const res = await fetch(url, { redirect: 'manual', signal });
      if (res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      return { status: res.status, text: await res.text() };
    });
  // The caller's own abort keeps its reason; the store's silence (the timeout) or a refused connection is the
  // durable store not answering.
  const answer = await (options.abortSignal
    ? read().catch((err: unknown) => {
        if (options.abortSignal?.aborted) throw err;
        return durableCall(`answer for instance ${id}`, () => Promise.reject(err));
      })
    : durableCall(`answer for instance ${id}`, read));
  if (!answer) return undefined;
  const { status, text } = answer;
  if (status !== 200 && status !== 202)
    throw new IntegrationError(
      'service_unavailable',
      `the durable store answered HTTP ${status} for instance ${id}`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const body = statusBody.safeParse(json);
  if (!body.success)
    throw new IntegrationError(
      'service_unavailable',
      `the durable store answered an unreadable status for instance ${id}`,
    );
  return body.data as DurableOrchestrationStatus;
}

/** What the extension answers for an instance, with its times as dates (as the library's own status has them). */
const statusBody = z
  .object({
    name: z.string(),
    instanceId: z.string(),
    createdTime: z.coerce.date(),
    lastUpdatedTime: z.coerce.date(),
    input: z.unknown(),
    output: z.unknown(),
    runtimeStatus: z.string(),
    customStatus: z.unknown().optional(),
    history: z.array(z.unknown()).optional(),
  })
  .loose();
