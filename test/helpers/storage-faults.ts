import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { RunningAzurite } from '../../cli/azurite';

/**
 * Azurite's blob and table endpoints behind HTTPS proxies that refuse chosen requests — a storage blip exactly
 * where a test wants one (the run record's write, a checkpoint's delete, a manifest's upload, the export slots'
 * query), every other request passed to the real Azurite. They present Azurite's own certificate, so the app trusts
 * them as it trusts Azurite.
 */
export interface StorageFault {
  method: string;
  /** Matched against the request's path (container and blob name). */
  path: RegExp;
  /** 403 is not retried by the Azure SDK: one refusal fails the call. */
  status?: number;
  /** How many matching requests to refuse (default: every one until removed). */
  times?: number;
  /** Only requests whose body matches (the proxy reads the body first): one write among many to the same path. */
  body?: RegExp;
  /** The storage error code answered (default AuthorizationFailure), e.g. BlockCountExceedsLimit with 409. */
  code?: string;
}

export async function storageFaultProxy(azurite: RunningAzurite) {
  if (!azurite.caFile || !azurite.keyFile)
    throw new Error('the storage fault proxy needs Azurite over HTTPS');
  const ca = readFileSync(azurite.caFile);
  const key = readFileSync(azurite.keyFile);
  const faults: StorageFault[] = [];
  const refused: string[] = [];
  const proxy = async (port: number) => {
    const server = createServer({ cert: ca, key }, async (req: IncomingMessage, res: ServerResponse) => {
      const path = new URL(req.url ?? '/', 'https://proxy').pathname;
      const candidates = faults.filter(
        (f) => f.method === req.method && f.path.test(path) && (f.times ?? 1) > 0,
      );
      // The body is read only when a fault looks at it; it is then sent on from memory.
      let body: Buffer | undefined;
      if (candidates.some((f) => f.body)) {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        body = Buffer.concat(chunks);
      }
      const text = body?.toString('utf8') ?? '';
      const fault = candidates.find((f) => !f.body || f.body.test(text));
      if (fault) {
        if (fault.times !== undefined) fault.times--;
        refused.push(`${req.method} ${path}`);
        if (!body) req.resume();
        const code = fault.code ?? 'AuthorizationFailure';
        res.writeHead(fault.status ?? 403, { 'content-type': 'application/xml', 'x-ms-error-code': code });
        res.end(
          `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>Refused by the test</Message></Error>`,
        );
        return;
      }
      const upstream = request(
        {
          host: '127.0.0.1',
          port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: `127.0.0.1:${port}` },
          ca,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      if (body) upstream.end(body);
      else req.pipe(upstream);
    });
    const sockets = new Set<import('node:stream').Duplex>();
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const at = (server.address() as AddressInfo).port;
    return Object.assign(server, {
      /** As a stopped account: connections refused, the open ones cut. */
      halt: () =>
        new Promise<void>((done) => {
          server.close(() => done());
          for (const socket of sockets) socket.destroy();
        }),
      resume: () => new Promise<void>((done) => server.listen(at, '127.0.0.1', done)),
    });
  };
  const blob = await proxy(azurite.blobPort);
  const table = await proxy(azurite.tablePort);
  const portOf = (server: typeof blob) => (server.address() as AddressInfo).port;
  return {
    /** Azurite's connection string with the blob and table endpoints through the proxies. */
    connectionString: azurite.connectionString
      .replace(/BlobEndpoint=https:\/\/127\.0\.0\.1:\d+\//, `BlobEndpoint=https://127.0.0.1:${portOf(blob)}/`)
      .replace(
        /TableEndpoint=https:\/\/127\.0\.0\.1:\d+\//,
        `TableEndpoint=https://127.0.0.1:${portOf(table)}/`,
      ),
    refuse(fault: StorageFault) {
      faults.push(fault);
    },
    clear() {
      faults.length = 0;
    },
    /** Storage stopped: nothing listens on its ports until `start`. */
    stop: () => Promise.all([blob.halt(), table.halt()]).then(() => undefined),
    start: () => Promise.all([blob.resume(), table.resume()]).then(() => undefined),
    refused,
    close: () =>
      Promise.all([blob, table].map((s) => new Promise<void>((done) => s.close(() => done())))).then(
        () => undefined,
      ),
  };
}
