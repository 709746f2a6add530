import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { systemClock, type Clock } from '../clock';
import { UpstreamError } from '../errors';
import { inSpan, SpanKind } from '../telemetry';
import { nodePost, type PostText } from './http';
import { DEFAULT_RETRY, isTransientStatus, withRetries, withTimeout, type RetryPolicy } from './retry';

export interface SignedPostOptions {
  /** The Standard Webhooks secret (`whsec_…`), read from the secret store when first needed. */
  secret: () => Promise<string>;
  clock?: Clock;
  /** How the message is sent: node:http(s) with kept-alive connections unless given (the export's callback). */
  post?: PostText;
  retry?: RetryPolicy;
  timeoutMs?: number;
  /** What to tell the operator when the receiver refuses for good (names the setting or field). */
  refusedHint: string;
  /** What happens next when the receiver stays unreachable. */
  unavailableHint: string;
}

/**
 * Standard Webhooks delivery (`webhook-id`, `webhook-timestamp`, `webhook-signature`): the message id comes
 * from a stable key, so it is the same on every retry and receivers can de-duplicate; 408/429/5xx and network
 * failures are retried with capped, jittered backoff honouring Retry-After; other statuses fail at once.
 */
export class SignedPoster {
  readonly description: string;
  private readonly clock: Clock;
  private signer?: Promise<Webhook>;

  constructor(
    readonly url: string,
    private readonly options: SignedPostOptions,
  ) {
    this.description = `webhook ${new URL(url).origin}`;
    this.clock = options.clock ?? systemClock;
  }

  static messageId(key: string): string {
    return `msg_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
  }

  async post(key: string, type: string, data: unknown, options: { abortSignal?: AbortSignal } = {}) {
    this.signer ??= this.options
      .secret()
      .then((s) => new Webhook(s))
      .catch((err: unknown) => {
        this.signer = undefined;
        throw err;
      });
    const signer = await this.signer;
    const id = SignedPoster.messageId(key);
    const policy = this.options.retry ?? DEFAULT_RETRY;
    const post = this.options.post ?? nodePost;
    const refused = (status: number) =>
      new UpstreamError(
        'upstream_rejected',
        this.description,
        `refused the message with ${status}; ${this.options.refusedHint}`,
        { upstreamStatus: status },
      );
    // The receiver's origin only: a callback URL's path or query may carry anything.
    await inSpan(
      'webhook',
      { endpoint: new URL(this.url).origin, operation: type },
      () =>
        withRetries<void>(
          async () => {
            const now = new Date(this.clock.now());
            const body = JSON.stringify({ type, timestamp: now.toISOString(), data });
            let res;
            try {
              // node:http follows no redirects: a 3xx is an answer, and not a success.
              res = await withTimeout(this.options.timeoutMs ?? 30_000, options.abortSignal, (abortSignal) =>
                post(this.url, body, {
                  headers: {
                    'content-type': 'application/json',
                    'webhook-id': id,
                    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
                    'webhook-signature': signer.sign(id, now, body),
                  },
                  abortSignal,
                  // The receiver's answer is not read: keep little of it, however long it is.
                  maxBytes: 64 * 1024,
                  beyondMax: 'drop',
                }),
              );
            } catch (err) {
              if (options.abortSignal?.aborted) throw err;
              // A destination refused before any connection (see the export callback's address check) is final.
              if (err instanceof UpstreamError && err.code === 'upstream_rejected') throw err;
              return { transient: { status: 0, cause: err } };
            }
            if (res.status >= 200 && res.status < 300) return { done: undefined };
            if (!isTransientStatus(res.status)) throw refused(res.status);
            return { transient: { status: res.status, retryAfter: res.header('retry-after') } };
          },
          policy,
          {
            abortSignal: options.abortSignal,
            clock: this.clock,
            exhausted: ({ status, cause }, attempts) =>
              new UpstreamError(
                'upstream_unavailable',
                this.description,
                status === 0
                  ? `not reachable after ${attempts} attempts; ${this.options.unavailableHint}`
                  : `answered ${status} ${attempts} times; ${this.options.unavailableHint}`,
                { cause, upstreamStatus: status || undefined },
              ),
          },
        ),
      { kind: SpanKind.CLIENT },
    );
  }
}
