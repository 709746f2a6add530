import { errorText, type ErrorCode } from './codes';
import { bounded } from './text';

/**
 * An RFC 9457 problem document: `type` (a URN naming the code), `title`, `status`, `detail`, and our `code`;
 * members such as `problems` add what the caller needs to fix the request. Never a stack, token or secret.
 */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  [member: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export const problemType = (code: ErrorCode) => `urn:tenant-integrations:error:${code}`;

/** How long a 409 of this code asks a client to wait before it tries again (every 409 here means "not now"). */
export const retryAfterOf = (code: ErrorCode): number => errorText(code).retryAfterSeconds ?? 1;

/**
 * The one place an HTTP error answer is built, for every route of the app and the local host: a problem document
 * as `application/problem+json`, with any headers (Retry-After, Location) the answer needs. A 409 always says when
 * to try again — `Retry-After` and `retryAfterSeconds` — from `retryAfterSeconds` (when the caller knows better) or
 * its code's.
 */
export function problem(
  status: number,
  code: ErrorCode,
  detail: string,
  options: {
    members?: Record<string, unknown>;
    headers?: Record<string, string>;
    retryAfterSeconds?: number;
  } = {},
): { status: number; headers: Record<string, string>; jsonBody: ProblemDocument } {
  const retryAfter =
    status === 409 ? Math.max(1, Math.ceil(options.retryAfterSeconds ?? retryAfterOf(code))) : undefined;
  return {
    status,
    headers: {
      'content-type': PROBLEM_CONTENT_TYPE,
      ...(retryAfter ? { 'retry-after': String(retryAfter) } : {}),
      ...options.headers,
    },
    jsonBody: {
      type: problemType(code),
      title: errorText(code).title,
      status,
      detail: bounded(detail),
      code,
      ...(retryAfter ? { retryAfterSeconds: retryAfter } : {}),
      ...options.members,
    },
  };
}
