import type { TokenCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { SecretNotFound, SecretStoreError } from '../errors';
import type { SecretStore } from './types';

export interface KeyVaultOptions {
  credential: TokenCredential;
  /** Emulators (Lowkey Vault) need challenge-resource verification off; Azure does not. */
  disableChallengeResourceVerification?: boolean;
  timeoutMs?: number;
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** Key Vault through @azure/keyvault-secrets; `get` reads the latest version. */
export class KeyVaultSecretStore implements SecretStore {
  readonly description: string;
  private readonly client: SecretClient;
  private readonly timeoutMs: number;

  constructor(vaultUrl: string, options: KeyVaultOptions) {
    this.description = `Key Vault ${vaultUrl}`;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.client = new SecretClient(vaultUrl, options.credential, {
      disableChallengeResourceVerification: options.disableChallengeResourceVerification,
      retryOptions: { maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2_000 },
      // Requests carry a bearer token: never re-sent to wherever a 3xx points.
      redirectOptions: { maxRetries: 0 },
    });
  }

  private signal(abortSignal?: AbortSignal): AbortSignal {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    return abortSignal ? AbortSignal.any([abortSignal, timeout]) : timeout;
  }

  async get(name: string, options: { abortSignal?: AbortSignal } = {}): Promise<string> {
    try {
      const secret = await this.client.getSecret(name, { abortSignal: this.signal(options.abortSignal) });
      if (secret.value === undefined) throw new SecretNotFound(name, this.description);
      return secret.value;
    } catch (err) {
      if (err instanceof SecretNotFound) throw err;
      // Azure answers 404 for a missing secret and 403 for a disabled one (Lowkey Vault: 404 for both).
      if (statusOf(err) === 404) throw new SecretNotFound(name, this.description);
      throw new SecretStoreError(
        `reading secret "${name}" from ${this.description} failed (${statusOf(err) ?? 'network'})`,
        err,
      );
    }
  }

  /** Starts the (soft) delete and does not wait for it: names deleted here are never set again. */
  async delete(name: string, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    try {
      await this.client.beginDeleteSecret(name, { abortSignal: this.signal(options.abortSignal) });
    } catch (err) {
      if (statusOf(err) === 404) return;
      throw new SecretStoreError(
        `deleting secret "${name}" from ${this.description} failed (${statusOf(err) ?? 'network'})`,
        err,
      );
    }
  }

  async set(name: string, value: string, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    try {
      await this.client.setSecret(name, value, { abortSignal: this.signal(options.abortSignal) });
    } catch (err) {
      throw new SecretStoreError(
        `writing secret "${name}" to ${this.description} failed (${statusOf(err) ?? 'network'})`,
        err,
      );
    }
  }
}
