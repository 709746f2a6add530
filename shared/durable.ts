import type { DurableClient } from 'durable-functions';

const RUNNING = ['Pending', 'Running', 'ContinuedAsNew'];

/** An instance's status for starters: a missing instance is `undefined`, not an error. */

export async function readInstance(client: DurableClient, id: string) {
  try {
    return await client.getStatus(id);
  } catch (err) {
    if (/404/.test((err as Error).message)) return undefined;
    throw err;
  }
}

export const isRunning = (runtimeStatus: string) => RUNNING.includes(runtimeStatus);
