import type { z } from 'zod';
import { systemClock, type Clock } from '../clock';
import { IntegrationError, LoginRequired, OutcomeUnknown, RequestRefused, UpstreamError } from '../errors';
import { silentLogger, type Logger } from '../log';
import { ClientError, GraphQLClient } from 'graphql-request';
import { fetchPost, neverSent, nodePost, type PostText } from '../net/http';
import { Pacer, type HeaderOf } from '../net/pacer';
import { DEFAULT_RETRY, isTransientStatus, retryAfterMs, withRetries, type RetryPolicy } from '../net/retry';
import { inSpan, setFields, SpanKind } from '../telemetry';
import type { Span } from '@opentelemetry/api';
import { bodyOf, graphqlErrors, resultOf, type Answer } from './answer';
import { analyseDocument, type Analysed } from './document';

/** Where bearer tokens come from: the M2M provider (read-only) or the delegated session (a person). */
export interface TokenSource {
  readonly kind: 'm2m' | 'delegated';
  getToken(options?: { abortSignal?: AbortSignal }): Promise<string>;
  invalidate(token: string): void;
}

export interface GraphqlClientOptions {
  timeoutMs?: number;
  retry?: RetryPolicy;
  logger?: Logger;
  clock?: Clock;
  /** Sends requests with this `fetch` instead of node:http (a test's, or one behind a proxy). */
  fetch?: typeof fetch;
  /** Answers larger than this fail as malformed instead of filling memory (default 64 MiB). */
  maxAnswerBytes?: number;
  random?: () => number;
  /**
   * Paces requests under the tenant's rate limit (shared/net/pacer.ts): one per credential, shared by the clients
   * that use it (shared/access.ts). Default: this client's own.
   */
  pacer?: Pacer;
  /** How long, in all, one request waits out 429s before it fails (default 5 minutes). */
  rateLimitPatienceMs?: number;
}

export interface RequestOptions<T> {
  variables?: Record<string, unknown>;
  abortSignal?: AbortSignal;
  /** Validates `data`; a mismatch is an error naming the endpoint and the fields. */
  schema?: z.ZodType<T>;
  timeoutMs?: number;
  /** A cap on this answer's size, below the client's own (an introspection answer). */
  maxAnswerBytes?: number;
}

/** The longest a Retry-After stops every request of the credential (a longer one is retried at this). */
const MAX_PACED_WAIT_MS = 60_000;

/**
 * GraphQL over HTTP (POST, JSON) with the service's rules (docs/service-rules.md): a bearer token per request, M2M tokens never sent
 * with a mutation, retries for transient faults, a 401 answered by one retry with a fresh token. Logs
 * name the operation, never the token or the variables.
 */
export class TenantGraphqlClient {
  private readonly post: PostText;
  private readonly documents = new Map<string, Analysed>();
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly maxAnswerBytes?: number;
  private readonly pacer: Pacer;
  private readonly rateLimitPatienceMs: number;

  constructor(
    readonly endpoint: string,
    private readonly tokens: TokenSource,
    options: GraphqlClientOptions = {},
  ) {
    this.post = options.fetch ? fetchPost(options.fetch) : nodePost;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.maxAnswerBytes = options.maxAnswerBytes;
    this.pacer = options.pacer ?? new Pacer({ clock: this.clock });
    this.rateLimitPatienceMs = options.rateLimitPatienceMs ?? 300_000;
  }

  async request<T = unknown>(document: string, options: RequestOptions<T> = {}): Promise<T> {
    const { operation, name, isMutation } = analyseDocument(this.documents, document);
    // M2M credentials are read-only (docs/service-rules.md#credentials). Refuse before anything reaches the network.
    if (isMutation && this.tokens.kind === 'm2m') {
      throw new RequestRefused(
        'read_only_credential',
        `${operation} is a mutation; M2M credentials are read-only. Run it with the delegated session of an admin.`,
      );
    }
    // One span per request (all its attempts): the operation's name, the last attempt and status — never variables.
    return inSpan(
      'graphql',
      { operation },
      (span) => this.attempts<T>(document, { operation, name, isMutation }, options, span),
      { kind: SpanKind.CLIENT },
    );
  }

  private attempts<T>(
    document: string,
    { operation, name, isMutation }: Analysed,
    options: RequestOptions<T>,
    span: Span,
  ): Promise<T> {
    let refreshedAfter401 = false;
    // A mutation is sent again only where the tenant cannot have acted on it (docs/service-rules.md#writes); any
    // other failure after it may have arrived leaves its outcome unknown, said so and never re-sent.
    const unknown = (what: string, upstreamStatus: number, cause?: unknown) => {
      this.logger.log('warn', 'graphql write outcome unknown', { operation, status: upstreamStatus });
      return new OutcomeUnknown(
        this.endpoint,
        `${operation} may or may not have been applied (${what}); it is not sent again`,
        { upstreamStatus, cause },
      );
    };
    const failed = (attempt: number, status: number, started: number) =>
      this.logger.log('warn', 'graphql request failed', {
        operation,
        attempt,
        status,
        durationMs: Date.now() - started,
      });
    return withRetries<T>(
      async (attempt) => {
        // At most twice round: once more with a fresh token after a 401.
        for (;;) {
          const token = await this.token(operation, isMutation, options.abortSignal);
          const paced = this.pacer.before(options.abortSignal);
          if (paced) await paced;
          const started = Date.now();
          let res: Answer;
          try {
            // The attempt's timeout is the transport's own timer (no AbortController per attempt).
            res = await this.send(document, name, options.variables, token, {
              abortSignal: options.abortSignal,
              timeoutMs: options.timeoutMs ?? this.timeoutMs,
              maxAnswerBytes: options.maxAnswerBytes,
            });
          } catch (err) {
            this.pacer.after(0);
            if (options.abortSignal?.aborted) throw options.abortSignal.reason;
            const tooLarge = err instanceof IntegrationError && err.code === 'response_too_large';
            if (isMutation && !neverSent(err))
              throw unknown(
                tooLarge ? 'its answer was too large' : 'no answer: connection lost or timed out',
                0,
                err,
              );
            if (tooLarge)
              throw new UpstreamError(
                'upstream_malformed',
                this.endpoint,
                `${operation}: ${(err as Error).message}`,
              );
            failed(attempt, 0, started); // network error or timeout: transient
            return { transient: { status: 0, cause: err } };
          }
          const { status, body } = res;
          this.pacer.after(
            status,
            res.header,
            retryAfterMs(res.retryAfter, this.clock.now(), MAX_PACED_WAIT_MS),
          );
          setFields(span, { attempt, status });
          if (status === 401 && !refreshedAfter401) {
            // The token may have been revoked or expired early: one retry with a fresh token.
            this.tokens.invalidate(token);
            refreshedAfter401 = true;
            this.logger.log('warn', 'graphql unauthorised; retrying once with a fresh token', {
              operation,
              attempt,
              status,
            });
            continue;
          }
          if (status === 401)
            throw new UpstreamError(
              'upstream_rejected',
              this.endpoint,
              `${operation} unauthorised even with a fresh token`,
              { upstreamStatus: status, unsent: true },
            );
          if (status >= 200 && status < 300) {
            this.logger.log('debug', 'graphql', {
              operation,
              attempt,
              status,
              durationMs: Date.now() - started,
            });
            if (!body && isMutation) throw unknown(`HTTP ${status} without a GraphQL result`, status);
            if (!body)
              throw new UpstreamError(
                'upstream_malformed',
                this.endpoint,
                `${operation}: response is not a GraphQL JSON result`,
              );
            return {
              done: resultOf(
                this.endpoint,
                this.logger,
                operation,
                status,
                body.data,
                body.errors,
                options.schema,
              ),
            };
          }
          if (!isTransientStatus(status)) {
            if (body?.errors?.length)
              throw graphqlErrors(this.logger, operation, body.errors, body.data, status);
            throw new UpstreamError(
              'upstream_rejected',
              this.endpoint,
              `${operation} refused with HTTP ${status}`,
              {
                upstreamStatus: status,
              },
            );
          }
          // 429 and 503 refuse a request before it is handled — unless the answer carries data, which says it ran.
          if (isMutation && ((status !== 429 && status !== 503) || body?.data != null))
            throw unknown(`HTTP ${status}`, status);
          failed(attempt, status, started);
          return { transient: { status, retryAfter: res.retryAfter } };
        }
      },
      this.retry,
      {
        abortSignal: options.abortSignal,
        clock: this.clock,
        random: this.random,
        patience: { when: (f) => f.status === 429, budgetMs: this.rateLimitPatienceMs },
        exhausted: ({ status, cause }, attempts) =>
          new UpstreamError(
            status ? 'upstream_unavailable' : 'upstream_timeout',
            this.endpoint,
            `${operation} failed after ${attempts} attempts (${status ? `HTTP ${status}` : 'network error or timeout'})`,
            // A mutation gets here only where no attempt can have been acted on.
            { status: 503, upstreamStatus: status, cause, unsent: isMutation },
          ),
      },
    );
  }

  /**
   * A token for one attempt. For a mutation, failing to get one (the identity provider or the secret store
   * unavailable) means nothing was sent: said so (`unsent`), so the write may wait and be sent later. A lost session
   * (`LoginRequired`) stays what it is.
   */
  private async token(operation: string, isMutation: boolean, abortSignal?: AbortSignal): Promise<string> {
    try {
      return await this.tokens.getToken({ abortSignal });
    } catch (err) {
      if (!isMutation || abortSignal?.aborted || err instanceof LoginRequired) throw err;
      throw new UpstreamError(
        'upstream_unavailable',
        this.endpoint,
        `${operation} not sent: no access token (${err instanceof Error ? err.message : String(err)})`,
        { status: 503, cause: err, unsent: true },
      );
    }
  }

  /**
   * One request through graphql-request's `GraphQLClient` (it builds the body and reads the answer), sent over
   * our kept-alive node:http transport (`this.post`: size cap, abort, no redirects) by a thin `fetch`. Its
   * outcomes become one shape: a status, Retry-After, and the body when it was a GraphQL result. Network
   * errors, timeouts and an over-large answer are thrown as they came.
   */
  private async send(
    document: string,
    operationName: string | undefined,
    variables: Record<string, unknown> | undefined,
    token: string,
    {
      abortSignal,
      timeoutMs,
      maxAnswerBytes,
    }: { abortSignal?: AbortSignal; timeoutMs: number; maxAnswerBytes?: number },
  ): Promise<Answer> {
    let answered: { status: number; retryAfter: string | null; header: HeaderOf } | undefined;
    const transport = async (url: URL | RequestInfo, init?: RequestInit): Promise<Response> => {
      // graphql-request hands over a Headers; reading it in place spares a copy per request.
      const given = init?.headers instanceof Headers ? init.headers : new Headers(init?.headers);
      const headers: Record<string, string> = {};
      given.forEach((value, name) => (headers[name] = value));
      // The token is added here, not given to graphql-request: its Headers would check and copy the ~1 KB token
      // character by character, twice per request (undici's WebIDL conversion), and it never needs it.
      headers.authorization = `Bearer ${token}`;
      const res = await this.post(String(url), String(init?.body ?? ''), {
        headers,
        maxBytes:
          maxAnswerBytes === undefined
            ? this.maxAnswerBytes
            : Math.min(maxAnswerBytes, this.maxAnswerBytes ?? maxAnswerBytes),
        abortSignal: init?.signal ?? abortSignal,
        timeoutMs,
      });
      answered = { status: res.status, retryAfter: res.header('retry-after'), header: res.header };
      const type = res.header('content-type');
      // graphql-request reads only status, ok, headers.get('content-type') and text() of an answer: a real Response
      // would copy the text into a byte stream and decode it again per page, and build Headers per answer
      // (docs/benchmarks.md, "Sync").
      const answer: Pick<Response, 'status' | 'ok' | 'text'> & { headers: Pick<Headers, 'get'> } = {
        status: res.status,
        ok: res.status >= 200 && res.status < 300,
        headers: { get: (name: string) => (name.toLowerCase() === 'content-type' ? type : null) },
        text: () => Promise.resolve(res.text),
      };
      return answer as Response;
    };
    const client = new GraphQLClient(this.endpoint, {
      fetch: transport,
      errorPolicy: 'all',
      // graphql-request would parse the document on every request for its name; analyse() has it cached.
      excludeOperationName: true,
      jsonSerializer: {
        parse: JSON.parse,
        stringify: (body: object) => JSON.stringify(operationName ? { ...body, operationName } : body),
      },
    });
    try {
      const out = await client.rawRequest<unknown, Record<string, unknown>>({
        query: document,
        variables,
        requestHeaders: { accept: 'application/graphql-response+json, application/json' },
        ...(abortSignal ? { signal: abortSignal } : {}),
      });
      return {
        ...(answered ?? { status: out.status, retryAfter: null }),
        body: bodyOf(out.data, out.errors),
      };
    } catch (err) {
      if (err instanceof ClientError)
        return {
          status: err.response.status,
          // The shim's Response carries only the content type; Retry-After is what the transport saw.
          retryAfter: answered?.retryAfter ?? null,
          header: answered?.header,
          body: bodyOf(err.response.data, err.response.errors),
        };
      // The server answered but not with a GraphQL result (not JSON, not an object): no body.
      if (answered) return { ...answered };
      throw err;
    }
  }
}
