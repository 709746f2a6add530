import { readFileSync, readdirSync } from 'node:fs';
import '../../devhost/host'; // the local host registers its own codes (timer_running) as it loads
import { join, resolve } from 'node:path';
import '../../devhost/errors';
import { FEATURES } from '../../shared/app';
import {
  ConfigError,
  declaredErrors,
  errorText,
  IntegrationError,
  problem,
  retryAfterOf,
  SecretNotFound,
  storedErrorCode,
  type ErrorCode,
} from '../../shared/errors';
import { createLogger, type Level } from '../../shared/log';
import { door, failureAnswer } from '../../shared/net/door';

/*
 * An HTTP function's door (shared/net/door.ts): what a handler throws is answered as a problem document by what it
 * means for the caller — retry (a dependency down), the operator's fix (set-up), or a bug (500 with the invocation's
 * id) — and logged by code and name, never by its text unless it is one of ours.
 */
const restError = (statusCode: number, code: string) =>
  Object.assign(new Error(`storage said ${code} for https://acct.blob.core.windows.net/x?sig=SECRET`), {
    name: 'RestError',
    statusCode,
    code,
  });

describe('failureAnswer', () => {
  it('a dependency down is 503 service_unavailable with Retry-After, naming what did not answer', () => {
    for (const err of [
      restError(403, 'AuthorizationFailure'),
      new IntegrationError('secret_store_unavailable', 'Key Vault did not answer'),
      Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
      Object.assign(new Error('Request failed'), { name: 'AxiosError', response: { status: 500 } }),
      new IntegrationError('service_unavailable', 'the durable store did not start the export'),
    ]) {
      const answer = failureAnswer(err, 'export');
      expect(answer).toMatchObject({
        status: 503,
        headers: { 'content-type': 'application/problem+json', 'retry-after': '10' },
        jsonBody: { code: 'service_unavailable', status: 503 },
      });
      expect(answer.jsonBody.detail).toMatch(/^the export request could not be answered: .+; retry shortly$/);
      // Never the error's own text: an SDK's message may carry a URL with its signature.
      expect(JSON.stringify(answer)).not.toContain('SECRET');
    }
    expect(failureAnswer(restError(500, 'InternalError'), 'runs').jsonBody.detail).toMatch(/storage/i);
  });

  it('a set-up problem is 503 under its own code, with its message (which names the fix)', () => {
    const config = failureAnswer(new ConfigError(['TENANT_API_URL: not a URL']), 'runs');
    expect(config).toMatchObject({ status: 503, headers: { 'retry-after': '60' } });
    expect(config.jsonBody).toMatchObject({
      code: 'config_invalid',
      detail: expect.stringContaining('TENANT_API_URL'),
    });
    expect(
      failureAnswer(new SecretNotFound('tenant-client-secret', 'Key Vault'), 'doctor').jsonBody.code,
    ).toBe('secret_not_found');
  });

  it('anything else is 500 unexpected, with the invocation id to find its log, and nothing of the error', () => {
    const answer = failureAnswer(
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'runs',
      'inv-1',
    );
    expect(answer).toMatchObject({
      status: 500,
      jsonBody: { code: 'unexpected', invocationId: 'inv-1', detail: expect.stringContaining('inv-1') },
    });
    expect(JSON.stringify(answer)).not.toMatch(/Cannot read|reading 'x'|at .+:\d+/);
    // Ours but not a set-up or a dependency: still unexpected here (a handler should have answered it itself).
    expect(failureAnswer(new IntegrationError('graphql_errors', 'x'), 'runs').status).toBe(500);
  });
});

describe('door', () => {
  const logged: Array<{ level: Level; message: string } & Record<string, unknown>> = [];
  const logger = createLogger((line) => logged.push(line));
  beforeEach(() => (logged.length = 0));

  it('passes a handler’s answer through untouched', async () => {
    const answer = { status: 202, jsonBody: { id: 'x' } };
    expect(await door('export', async () => answer, { logger: () => logger })()).toBe(answer);
  });

  it('answers what the handler throws and logs it by code and name, with the invocation id from the context', async () => {
    const handler = door(
      'runs',
      async (_request: unknown, _context: unknown): Promise<never> => {
        throw restError(403, 'AuthorizationFailure');
      },
      { logger: () => logger },
    );
    const answer = await handler({ url: 'http://x/api/manage/runs' }, { invocationId: 'inv-7' });
    expect(answer.status).toBe(503);
    expect(logged).toEqual([
      {
        level: 'warn',
        message: 'runs request failed',
        operation: 'runs',
        code: 'storage_unavailable',
        status: 503,
        reason: 'RestError',
        invocationId: 'inv-7',
      },
    ]);
    expect(JSON.stringify(logged)).not.toContain('SECRET');
  });

  it('still answers when the logger cannot be had (the configuration is what failed)', async () => {
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const handler = door(
        'health',
        async () => {
          throw new ConfigError(['AzureWebJobsStorage: not set']);
        },
        {
          logger: () => {
            throw new ConfigError(['AzureWebJobsStorage: not set']);
          },
        },
      );
      expect((await handler()).jsonBody).toMatchObject({ code: 'config_invalid' });
      expect(write.mock.calls.map((c) => String(c[0])).join('')).toContain(
        '"message":"health request failed"',
      );
    } finally {
      write.mockRestore();
    }
  });
});

describe('codes as stored', () => {
  it('read back as ours: old upper-case codes and renamed ones find theirs; unknown ones read as unexpected', () => {
    expect(storedErrorCode('storage_unavailable')).toBe('storage_unavailable');
    expect(storedErrorCode('CREDENTIAL_REJECTED')).toBe('credential_rejected');
    expect(storedErrorCode('LOGIN_REQUIRED')).toBe('admin_login_required');
    expect(storedErrorCode('a_code_from_a_later_version')).toBe('unexpected');
  });
});

describe('409: every one says when to try again', () => {
  const root = resolve(__dirname, '../..');
  /** Every `problem(409, '<code>'…)` in the app and the local host, as written. */
  const conflicts = () =>
    ['shared', 'devhost', 'functions'].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .flatMap((f) => [
          ...readFileSync(join(root, dir, f), 'utf8').matchAll(/problem\(\s*409,\s*'([a-z_]+)'/g),
        ])
        .map((m) => m[1]),
    );

  it('Retry-After and retryAfterSeconds on every 409, from its code or what the caller knows', () => {
    // Every code: the core's, each feature's (declared as the app composes them) and the local host's.
    expect(FEATURES.length).toBeGreaterThan(0);
    for (const code of declaredErrors().map((e) => e.code) as ErrorCode[]) {
      const answer = problem(409, code, 'not now');
      expect(answer.headers['retry-after']).toBe(String(retryAfterOf(code)));
      expect(answer.jsonBody.retryAfterSeconds).toBe(retryAfterOf(code));
    }
    // A caller that knows better (a device code's expiry) says so; a fraction rounds up, never below one second.
    expect(
      problem(409, 'device_login_running', 'x', { retryAfterSeconds: 431.2 }).headers['retry-after'],
    ).toBe('432');
    expect(problem(409, 'sync_running', 'x', { retryAfterSeconds: 0 }).headers['retry-after']).toBe('1');
    // Other statuses carry none unless given.
    expect(problem(400, 'invalid_request', 'x').headers['retry-after']).toBeUndefined();
    expect(problem(400, 'invalid_request', 'x').jsonBody.retryAfterSeconds).toBeUndefined();
  });

  it('each code a route answers 409 with declares its own wait, and the wait is what its action says to do', () => {
    const used = [...new Set(conflicts())].sort();
    expect(used).toEqual(
      expect.arrayContaining([
        'admin_login_required',
        'device_login_running',
        'sync_running',
        'timer_running',
      ]),
    );
    for (const code of used as ErrorCode[]) {
      expect([code, errorText(code).retryAfterSeconds]).toEqual([code, expect.any(Number)]);
      expect([code, /Retry-After|again|retry/i.test(errorText(code).action)]).toEqual([code, true]);
    }
  });
});
