import type { Clock } from '../clock';
import { SecretNotFound } from '../errors';
import { silentLogger, type Logger } from '../log';
import type { SecretStore } from './types';

interface Entry {
  value: string;
  readAt: number;
}

/**
 * A short in-memory cache in front of a store. Concurrent reads of one name share one request; after a
 * successful read, an outage of the store serves the cached value (and says so in the log); a missing
 * secret is never hidden by the cache.
 */
export class CachedSecretStore implements SecretStore {
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<string>>();
  readonly description: string;

  constructor(
    private readonly inner: SecretStore,
    private readonly options: { ttlMs: number; clock: Clock; logger?: Logger },
  ) {
    this.description = inner.description;
  }

  async get(name: string, opts: { abortSignal?: AbortSignal } = {}): Promise<string> {
    const cached = this.entries.get(name);
    if (cached && this.options.clock.now() - cached.readAt < this.options.ttlMs) return cached.value;
    let pending = this.inFlight.get(name);
    if (!pending) {
      pending = this.read(name, cached, opts).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, pending);
    }
    return pending;
  }

  private async read(
    name: string,
    stale: Entry | undefined,
    opts: { abortSignal?: AbortSignal },
  ): Promise<string> {
    try {
      const value = await this.inner.get(name, opts);
      this.entries.set(name, { value, readAt: this.options.clock.now() });
      return value;
    } catch (err) {
      if (stale && !(err instanceof SecretNotFound)) {
        (this.options.logger ?? silentLogger).log(
          'warn',
          'secret store unavailable; serving the cached value',
          {
            secretName: name,
            reason: (err as Error).message,
          },
        );
        return stale.value;
      }
      if (err instanceof SecretNotFound) this.entries.delete(name);
      throw err;
    }
  }

  /** Forget a cached value, e.g. after the IdP rejected it (rotation). */
  invalidate(name: string): void {
    this.entries.delete(name);
  }

  async delete(name: string, opts: { abortSignal?: AbortSignal } = {}): Promise<void> {
    this.entries.delete(name);
    await this.inner.delete(name, opts);
  }

  async set(name: string, value: string, opts: { abortSignal?: AbortSignal } = {}): Promise<void> {
    await this.inner.set(name, value, opts);
    this.entries.set(name, { value, readAt: this.options.clock.now() });
  }
}
