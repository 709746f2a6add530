import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { startAzurite } from '../../cli/azurite';
import { LocalFileSecretStore } from '../../shared/secrets';
import { startHostProcess } from './host';
import { sandboxFixture, type StartOptions } from './sandbox';
import { storageFaultProxy } from './storage-faults';

/**
 * The whole local stack as `npm start` runs it — Azurite, the sandbox and the real app on the local host —
 * on free ports, with one `advance` that moves the sandbox's clock and the host's together. Azurite runs over
 * HTTPS with OAuth (as `dev` starts it); `blobService()` is a client in this process that trusts its certificate.
 */
export async function stackFixture(
  options: {
    sandbox?: StartOptions;
    env?: Record<string, string>;
    storageFaults?: boolean;
    /** The app the host loads: the build's function files unless this names others (e.g. a staged package's bundle). */
    app?: string;
  } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'ti-stack-'));
  const [azurite, sb] = await Promise.all([startAzurite({ tls: true }), sandboxFixture(options.sandbox)]);
  // The host's blob requests through a proxy that can refuse chosen ones (test/helpers/storage-faults.ts).
  const storage = options.storageFaults ? await storageFaultProxy(azurite) : undefined;
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  const keys = {
    master: 'master-key-for-tests-0000000001',
    function: 'function-key-for-tests-00000001',
    system: 'system-key-for-tests-0000000001',
  };
  const env = {
    ...sb.settings,
    LOCAL_SECRETS_FILE: secretsFile,
    ...(storage ? { AzureWebJobsStorage: storage.connectionString } : {}),
    ...options.env,
  };
  const app = options.app;
  let host = startHostProcess(azurite, { env, keys, app });
  let line = await host.ready;
  let logs = '';
  const api = (path: string, init: RequestInit = {}, key: string | null = keys.master) =>
    fetch(`${line.apiBaseUrl}/${path}`, {
      ...init,
      headers: { ...(key ? { 'x-functions-key': key } : {}), ...(init.headers as Record<string, string>) },
    });
  return {
    sb,
    azurite,
    keys,
    dir,
    secretsFile,
    get url() {
      return line.url;
    },
    get apiBaseUrl() {
      return line.apiBaseUrl;
    },
    api,
    json: async (path: string, init: RequestInit = {}, key?: string | null) => {
      const res = await api(path, init, key);
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
    },
    /** Moves both clocks: the sandbox's expiries and the host's durable timers stay in step. */
    advance: async (seconds: number) => {
      await sb.advance(seconds);
      await fetch(`${line.url}/admin/host/clock?code=${keys.master}`, {
        method: 'POST',
        body: JSON.stringify({ advanceSeconds: seconds }),
      });
    },
    /** Moves only the host's clock: the app then polls early from the sandbox's point of view. */
    advanceHostOnly: (seconds: number) =>
      fetch(`${line.url}/admin/host/clock?code=${keys.master}`, {
        method: 'POST',
        body: JSON.stringify({ advanceSeconds: seconds }),
      }),
    /**
     * Faults of the host's durable store API (devhost/host.ts): the next starts made and their answer lost, the next
     * status reads dropped unanswered.
     */
    hostFaults: (faults: { loseStartAnswers?: number; dropStatusReads?: number }) =>
      fetch(`${line.url}/admin/host/faults?code=${keys.master}`, {
        method: 'POST',
        body: JSON.stringify(faults),
      }),
    runFunction: (name: string) =>
      fetch(`${line.url}/admin/functions/${name}?code=${keys.master}`, { method: 'POST' }),
    blobService: () =>
      // `tlsOptions` reaches the core pipeline through the storage options (not in their type).
      BlobServiceClient.fromConnectionString(azurite.connectionString, {
        tlsOptions: { ca: azurite.ca },
      } as StoragePipelineOptions),
    secrets: async () => JSON.parse(await readFile(secretsFile, 'utf8')) as Record<string, string>,
    /** Everything the host process wrote to stderr (its log lines). */
    logs: () => logs + host.stderr(),
    /** Every JSON log line the host wrote, parsed (a line that is not JSON is an empty record). */
    logRecords: () =>
      (logs + host.stderr())
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => {
          try {
            return JSON.parse(l) as Record<string, unknown>;
          } catch {
            return {};
          }
        }),
    /** Stops the host (`kill`: SIGKILL, a crash) and starts it again over the same storage. */
    restart: async (options: { kill?: boolean; env?: Record<string, string> } = {}) => {
      logs += host.stderr();
      await host.stop(options.kill ? 'SIGKILL' : 'SIGTERM');
      host = startHostProcess(azurite, { env: { ...env, ...options.env }, keys, app });
      line = await host.ready;
    },
    /** With `storageFaults`: refuse chosen blob requests of the host. */
    storage,
    close: async () => {
      await host.stop();
      await storage?.close();
      await Promise.all([azurite.stop(), sb.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type Stack = Awaited<ReturnType<typeof stackFixture>>;
