import { systemClock, type Clock } from '../clock';
import type { TenantSettings } from '../config';
import { CredentialRejected, UpstreamError } from '../errors';
import { silentLogger, type Logger } from '../log';
import { DEFAULT_RETRY, withRetries, type RetryPolicy } from '../net/retry';
import { inSpan, SpanKind } from '../telemetry';
import { tenantEndpoints } from './endpoints';
import {
  clientCredentialsTokenSchema,
  isCredentialRejection,
  parseBody,
  postForm,
  type FetchLike,
  type OAuthReply,
} from './oauth';

/** A token endpoint's answer once transient failures are behind it. */
type Settled = Exclude<OAuthReply, { kind: 'transient' }>;

export interface AccessToken {
  token: string;
  /** Milliseconds, measured from when the request was sent (conservative). */
  expiresAt: number;
}

/** What the provider needs of the secret store: read, and forget a cached value after a rejection. */
export interface SecretSource {
  get(name: string, options?: { abortSignal?: AbortSignal }): Promise<string>;
  invalidate(name: string): void;
}

export interface ClientCredentialsOptions {
  clock?: Clock;
  logger?: Logger;
  fetch?: FetchLike;
  /** Per token request. */
  timeoutMs?: number;
  /** Renewal starts this long before expiry; until `minValiditySeconds` the old token is still handed out. */
  renewBeforeSeconds?: number;
  /** No caller gets a token with less validity than this (≥ the GraphQL request timeout). */
  minValiditySeconds?: number;
  retry?: RetryPolicy;
  /** After a rejection, callers fail fast for this long, doubling per repeated rejection up to the max. */
  rejectionBackoffMs?: { base: number; max: number };
  random?: () => number;
}

/**
 * One cached client-credentials token per process (docs/service-rules.md#tokens): exactly the documented call, no scope, no
 * refresh token; concurrent callers share one request; renewed ahead of expiry.
 */
export class ClientCredentialsProvider {
  readonly kind = 'm2m' as const;
  private cached?: AccessToken;
  private inFlight?: Promise<AccessToken>;
  private rejection?: { error: CredentialRejected; until: number; count: number };
  private readonly tokenUrl: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly o: Required<Omit<ClientCredentialsOptions, 'clock' | 'logger' | 'fetch'>> & {
    fetch?: FetchLike;
  };

  constructor(
    readonly tenant: TenantSettings,
    private readonly secrets: SecretSource,
    private readonly secretName: string,
    options: ClientCredentialsOptions = {},
  ) {
    this.tokenUrl = tenantEndpoints(tenant).token;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.o = {
      timeoutMs: options.timeoutMs ?? 10_000,
      renewBeforeSeconds: options.renewBeforeSeconds ?? 60,
      minValiditySeconds: options.minValiditySeconds ?? 30,
      retry: options.retry ?? DEFAULT_RETRY,
      rejectionBackoffMs: options.rejectionBackoffMs ?? { base: 5_000, max: 300_000 },
      random: options.random ?? Math.random,
      fetch: options.fetch,
    };
  }

  /** A token valid for at least `minValiditySeconds`. */
  async getToken(options: { abortSignal?: AbortSignal } = {}): Promise<string> {
    const now = this.clock.now();
    const c = this.cached;
    if (c && now < c.expiresAt - this.o.renewBeforeSeconds * 1000) return c.token;
    if (c && now < c.expiresAt - this.o.minValiditySeconds * 1000) {
      // Renewal window: renew in the background; a failure here does not fail callers.
      this.renew().catch((err: Error) =>
        this.logger.log('warn', 'token renewal failed; the current token is still valid', {
          code: (err as CredentialRejected).code,
          reason: err.message,
        }),
      );
      return c.token;
    }
    if (this.rejection && now < this.rejection.until) throw this.rejection.error;
    return (await abortable(this.renew(), options.abortSignal)).token;
  }

  /** After a 401 from the API: forget this token so the next caller gets a fresh one. */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  private renew(): Promise<AccessToken> {
    this.inFlight ??= inSpan(
      'token',
      { endpoint: 'token', clientId: this.tenant.clientId },
      () => this.acquire(),
      {
        kind: SpanKind.CLIENT,
      },
    ).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async acquire(): Promise<AccessToken> {
    let secret = await this.secrets.get(this.secretName);
    let { reply, sentAt } = await this.request(secret);
    if (isCredentialRejection(reply)) {
      // Maybe the secret was rotated: re-read it once from the store and try again if it changed.
      this.secrets.invalidate(this.secretName);
      const reread = await this.secrets.get(this.secretName);
      if (reread !== secret) {
        secret = reread;
        ({ reply, sentAt } = await this.request(secret));
      }
    }
    if (reply.kind === 'ok') {
      const body = parseBody(this.tokenUrl, clientCredentialsTokenSchema, reply.body);
      this.rejection = undefined;
      this.cached = { token: body.access_token, expiresAt: sentAt + body.expires_in * 1000 };
      return this.cached;
    }
    if (reply.kind === 'oauth-error' && isCredentialRejection(reply)) {
      const count = (this.rejection?.count ?? 0) + 1;
      const wait = Math.min(this.o.rejectionBackoffMs.max, this.o.rejectionBackoffMs.base * 2 ** (count - 1));
      const error = new CredentialRejected(this.tenant.clientId, reply.error, { retryAfterMs: wait });
      this.rejection = { error, until: this.clock.now() + wait, count };
      this.logger.log('error', 'M2M credential rejected', {
        clientId: this.tenant.clientId,
        code: error.code,
        retryInMs: wait,
      });
      throw error;
    }
    throw this.failure(reply);
  }

  /** One logical token request: transient failures retried by the one retry policy. */
  private request(secret: string): Promise<{ reply: Settled; sentAt: number }> {
    return withRetries<{ reply: Settled; sentAt: number }>(
      async (attempt) => {
        const sentAt = this.clock.now();
        const started = Date.now();
        const reply = await postForm(
          this.tokenUrl,
          { grant_type: 'client_credentials', client_id: this.tenant.clientId, client_secret: secret },
          { fetch: this.o.fetch, timeoutMs: this.o.timeoutMs },
        );
        this.logger.log('debug', 'token request', {
          endpoint: 'token',
          attempt,
          status: reply.status,
          durationMs: Date.now() - started,
        });
        return reply.kind === 'transient'
          ? { transient: { status: reply.status, retryAfter: reply.retryAfter } }
          : { done: { reply, sentAt } };
      },
      this.o.retry,
      {
        clock: this.clock,
        random: this.o.random,
        onRetry: (attempt, waitMs, { status }) =>
          this.logger.log('warn', 'token request failed; retrying', {
            endpoint: 'token',
            attempt,
            status,
            retryInMs: waitMs,
          }),
        exhausted: ({ status }) =>
          new UpstreamError(
            'upstream_unavailable',
            this.tokenUrl,
            `token endpoint unavailable (${status || 'network error or timeout'}) after ${this.o.retry.maxAttempts} attempts`,
            { status: 503, upstreamStatus: status },
          ),
      },
    );
  }

  /** A refusal that is neither a success nor a rejected credential (transient ones never get here). */
  private failure(reply: Exclude<OAuthReply, { kind: 'ok' | 'transient' }>): UpstreamError {
    const what =
      reply.kind === 'oauth-error'
        ? `${reply.error}${reply.description ? `: ${reply.description}` : ''}`
        : `HTTP ${reply.status}`;
    return new UpstreamError('upstream_rejected', this.tokenUrl, `token request refused (${what})`, {
      upstreamStatus: reply.status,
    });
  }
}

/** Lets one caller stop waiting without cancelling the request others share. */
export function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
