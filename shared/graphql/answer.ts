import type { z } from 'zod';
import { GraphqlErrors, UpstreamError } from '../errors';
import type { Logger } from '../log';
import type { HeaderOf } from '../net/pacer';

/** How the client reads an answer: its body, its data checked against a schema, its errors as one error. */
/** A GraphQL-over-HTTP answer's body: `data` and/or `errors`. */
export interface GraphqlBody {
  data?: unknown;
  errors?: unknown[];
}

/** What one request came to: the status, Retry-After, and the GraphQL body when the answer had one. */
export interface Answer {
  status: number;
  retryAfter: string | null;
  body?: GraphqlBody;
  header?: HeaderOf;
}

export const bodyOf = (data: unknown, errors: unknown): GraphqlBody | undefined =>
  data === undefined && (errors === undefined || errors === null)
    ? undefined
    : { data, errors: Array.isArray(errors) ? errors : undefined };

export function resultOf<T>(
  endpoint: string,
  logger: Logger,
  operation: string,
  status: number,
  data: unknown,
  errors: ReadonlyArray<unknown> | undefined,
  schema?: z.ZodType<T>,
): T {
  if (errors?.length) throw graphqlErrors(logger, operation, errors, data, status);
  if (data === null || data === undefined) {
    throw new UpstreamError(
      'upstream_malformed',
      endpoint,
      `${operation}: response has neither data nor errors`,
    );
  }
  if (!schema) return data as T;
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const fields = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.')}: ${i.message}`)
      .join('; ');
    throw new UpstreamError('upstream_malformed', endpoint, `${operation}: unexpected data (${fields})`);
  }
  return parsed.data;
}

export function graphqlErrors(
  logger: Logger,
  operation: string,
  raw: ReadonlyArray<unknown>,
  data: unknown,
  status: number,
): GraphqlErrors {
  const errors = raw.map((e) => {
    const o = (e ?? {}) as { message?: unknown; path?: unknown; extensions?: { code?: unknown } };
    return {
      message: typeof o.message === 'string' ? o.message : 'unknown error',
      code: typeof o.extensions?.code === 'string' ? o.extensions.code : undefined,
      path: Array.isArray(o.path) ? (o.path as Array<string | number>) : undefined,
    };
  });
  logger.log('warn', 'graphql errors', {
    operation,
    status,
    count: errors.length,
    code: errors[0]?.code,
  });
  return new GraphqlErrors(operation, errors, data ?? null, { upstreamStatus: status });
}
