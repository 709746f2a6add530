import type { IncomingMessage, ServerResponse } from 'node:http';
import type { problem } from '../shared/errors';
import { DurableHttpError } from './durable/protocol';

/** The most the local host reads of a request body, as the Functions host bounds its own. */
export const BODY_LIMIT = 10 * 1024 * 1024;

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > BODY_LIMIT) throw new DurableHttpError(413, 'request body too large');
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The host's own refusal of an /api request, as the app's routes refuse: a problem document. */
export function refuse(res: ServerResponse, answer: ReturnType<typeof problem>) {
  reply(res, answer.status, answer.jsonBody, answer.headers);
}

export function reply(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  if (res.headersSent) return;
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    ...(body !== undefined && typeof body !== 'string' ? { 'content-type': 'application/json' } : {}),
    ...headers,
  });
  res.end(text);
}
