import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DurableClient } from 'durable-functions';
import { readInstance } from '../../shared/durable';

/**
 * readInstance against a real HTTP server standing in for the Durable Functions extension's status endpoint (the
 * extension itself needs the Functions host, which cannot run here).
 */
let server: Server;
let base: string;
let answer: (req: IncomingMessage, res: ServerResponse) => void;

beforeAll(async () => {
  server = createServer((req, res) => answer(req, res));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runtime/webhooks/durabletask/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
});

const client = () => ({ clientData: { rpcBaseUrl: base } }) as unknown as DurableClient;

const status = {
  name: 'SyncOrchestrator',
  instanceId: 'sync-acme',
  createdTime: '2026-11-25T10:00:00Z',
  lastUpdatedTime: '2026-11-25T10:01:00Z',
  input: null,
  output: null,
  runtimeStatus: 'Running',
};

describe('readInstance', () => {
  it('reads a status, and answers undefined for an instance the store does not know', async () => {
    answer = (req, res) => {
      if (req.url?.endsWith('/instances/sync-acme'))
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(status));
      else res.writeHead(404).end();
    };
    const read = await readInstance(client(), 'sync-acme');
    expect(read?.runtimeStatus).toBe('Running');
    expect(read?.createdTime).toEqual(new Date('2026-11-25T10:00:00Z'));
    expect(await readInstance(client(), 'no-such-instance')).toBeUndefined();
  });

  it('gives up on a store that never answers, also when the caller passes a signal of its own', async () => {
    answer = () => undefined; // the request is read and never answered
    // Said as the durable store not answering (a route answers 503), the timeout kept as the cause.
    await expect(readInstance(client(), 'sync-acme', { timeoutMs: 50 })).rejects.toMatchObject({
      code: 'service_unavailable',
      cause: { name: 'TimeoutError' },
    });
    // A caller's signal that never fires used to replace the timeout: the read waited as long as the socket did.
    const caller = new AbortController();
    await expect(
      readInstance(client(), 'sync-acme', { timeoutMs: 50, abortSignal: caller.signal }),
    ).rejects.toMatchObject({ code: 'service_unavailable', cause: { name: 'TimeoutError' } });
  });

  it("stops when the caller's signal fires, with the caller's reason", async () => {
    answer = () => undefined;
    const caller = new AbortController();
    const read = readInstance(client(), 'sync-acme', { abortSignal: caller.signal });
    setImmediate(() => caller.abort(new Error('the starter gave up')));
    await expect(read).rejects.toThrow('the starter gave up');
  });
});
