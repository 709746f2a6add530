import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

/**
 * A downstream receiver on a free loopback port that checks every request with the `standardwebhooks`
 * verifier, as a real receiver would. `failNext(n, status)` makes it refuse the next n requests.
 */
export async function webhookReceiver(
  secret = `whsec_${Buffer.from('receiver-test-secret-32-bytes!!!').toString('base64')}`,
  options: { tls?: { certFile: string; keyFile: string }; path?: string } = {},
) {
  const verifier = new Webhook(secret);
  const received: Received[] = [];
  const rejected: string[] = [];
  let failures: { left: number; status: number } = { left: 0, status: 503 };
  let slow: { left: number; ms: number } = { left: 0, ms: 0 };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (slow.left > 0) {
        slow.left--;
        await new Promise((r) => setTimeout(r, slow.ms));
      }
      const body = Buffer.concat(chunks).toString('utf8');
      if (failures.left > 0) {
        failures.left--;
        res.writeHead(failures.status).end();
        return;
      }
      try {
        const payload = verifier.verify(body, headersOf(req.headers)) as {
          type: string;
          data: Record<string, unknown>;
        };
        received.push({ id: String(req.headers['webhook-id']), type: payload.type, data: payload.data });
        res.writeHead(204).end();
      } catch (err) {
        rejected.push((err as Error).message);
        res.writeHead(400).end();
      }
    });
  };
  const server = options.tls
    ? createHttpsServer(
        { cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) },
        handler,
      )
    : createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${options.path ?? '/hooks/sync'}`,
    secret,
    received,
    rejected,
    failNext: (left: number, status = 503) => {
      failures = { left, status };
    },
    /** The next `left` requests are answered after `ms`. */
    slowNext: (left: number, ms: number) => {
      slow = { left, ms };
    },
    /** The messages once each: receivers de-duplicate on webhook-id. */
    unique: () => [...new Map(received.map((m) => [m.id, m])).values()],
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const headersOf = (h: IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : String(v)]));
