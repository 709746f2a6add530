import type { HttpResponseInit } from '@azure/functions';
import { codeOf, errorText, IntegrationError, problem, type ErrorCode } from '../errors';
import { stderrLogger, type Logger } from '../log';

/**
 * Every HTTP function's door. What its handler throws — storage or Key Vault down, the durable store not answering,
 * a setting wrong, a bug — becomes a problem document, never the host's bare 500 or a stack:
 *
 * - a dependency down: 503 `service_unavailable` with Retry-After, the detail naming what did not answer;
 * - the set-up at fault (a setting, a secret, the operations file): 503 with its own code and message, which names
 *   the fix (our errors' messages never carry a value or a secret);
 * - anything else: 500 `unexpected`, with the invocation's id to find its log record.
 *
 * The failure is logged by its code and the error's name — never its message, unless it is one of ours.
 */

/** Codes that mean a dependency did not answer: the caller retries. */
const DEPENDENCY_DOWN: ReadonlySet<ErrorCode> = new Set([
  'storage_unavailable',
  'secret_store_unavailable',
  'upstream_unavailable',
  'upstream_timeout',
  'service_unavailable',
]);

/** Node's and axios' names for a connection that failed: the durable store or another local service is down. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);

/** The code a failure is answered under: ours, a storage refusal's, or a connection's that failed. */
export function failureCode(err: unknown): ErrorCode {
  const code = codeOf(err);
  if (code !== 'unexpected') return code;
  const e = err as
    | { name?: unknown; code?: unknown; cause?: { code?: unknown }; response?: { status?: unknown } }
    | undefined;
  const network = e?.code ?? e?.cause?.code;
  if (typeof network === 'string' && NETWORK_CODES.has(network)) return 'service_unavailable';
  // durable-functions' client (axios) when the host's durable API answers 5xx.
  if (e?.name === 'AxiosError' && typeof e.response?.status === 'number' && e.response.status >= 500)
    return 'service_unavailable';
  return 'unexpected';
}

/** The answer for a failure that reached the door. */
export function failureAnswer(err: unknown, what: string, invocationId?: string): HttpResponseInit {
  const code = failureCode(err);
  if (DEPENDENCY_DOWN.has(code))
    return problem(
      503,
      'service_unavailable',
      `the ${what} request could not be answered: ${errorText(code).title.toLowerCase()}; retry shortly`,
      { headers: { 'retry-after': '10' } },
    );
  // A set-up the operator fixes: its message names the setting, secret or file.
  if (errorText(code).setup && err instanceof IntegrationError)
    return problem(503, code, err.message, { headers: { 'retry-after': '60' } });
  return problem(
    500,
    'unexpected',
    `the ${what} request failed unexpectedly${invocationId ? `; the app's log has it under invocation ${invocationId}` : ''}`,
    { members: invocationId ? { invocationId } : undefined },
  );
}

/**
 * Wraps an HTTP handler (`app.http`'s or `df.app.client.http`'s) so that nothing it throws leaves as a bare 500.
 * `logger` is asked for only when a failure is logged; if it cannot be had (configuration invalid), stderr.
 */
export function door<A extends unknown[]>(
  what: string,
  handler: (...args: A) => Promise<HttpResponseInit> | HttpResponseInit,
  options: { logger?: () => Logger } = {},
): (...args: A) => Promise<HttpResponseInit> {
  return async (...args: A) => {
    try {
      return await handler(...args);
    } catch (err) {
      const invocationId = args
        .map((a) => (a as { invocationId?: unknown } | undefined)?.invocationId)
        .find((id): id is string => typeof id === 'string');
      const answer = failureAnswer(err, what, invocationId);
      let logger: Logger;
      try {
        logger = options.logger?.() ?? stderrLogger();
      } catch {
        logger = stderrLogger();
      }
      logger.log(answer.status === 500 ? 'error' : 'warn', `${what} request failed`, {
        operation: what,
        code: failureCode(err),
        status: answer.status,
        reason: err instanceof IntegrationError ? err.message.split('\n')[0] : (err as Error)?.name,
        invocationId,
      });
      return answer;
    }
  };
}
