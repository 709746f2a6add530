import type { TokenCredential } from '@azure/identity';
import type { SecretClient } from '@azure/keyvault-secrets';
import type { Agent } from 'node:https';
import { SecretNotFound, SecretStoreError } from '../errors';
import { withTimeout } from '../net/retry';
import { inSpan, SpanKind } from '../telemetry';
import type { SecretStore } from './types';

export interface KeyVaultOptions {
  credential: TokenCredential;
  /** Emulators (Lowkey Vault) need challenge-resource verification off; Azure does not. */
  disableChallengeResourceVerification?: boolean;
  timeoutMs?: number;
  /** The HTTPS agent for every request (tests: one that resolves the vault's name to a local server). */
  agent?: Agent;
}

/**
 * The Key Vault REST API version the app speaks: the one whose recorded answers (the Azure SDK's own live
 * recordings, test/fixtures/key-vault/) our contract tests replay. Pinned, so an SDK update cannot change it
 * unnoticed.
 */
export const KEY_VAULT_API_VERSION = '7.5';

interface KeyVaultFailure {
  statusCode?: number;
  code?: string;
  // The SDK hands the service's `innererror` on as `innerError`.
  details?: { error?: { code?: string; innerError?: { code?: string }; innererror?: { code?: string } } };
  message?: string;
}

/** What a failed call was, and the one action that fixes it; never the secret's value. */
function explain(err: unknown, action: 'get' | 'set' | 'delete', name: string, vault: string): Error {
  const e = err as KeyVaultFailure;
  const status = e.statusCode;
  const inner = (e.details?.error?.innerError ?? e.details?.error?.innererror)?.code;
  const verb = { get: 'reading', set: 'writing', delete: 'deleting' }[action];
  if (status === 404 && action === 'get') return new SecretNotFound(name, vault);
  if (status === 403 && inner === 'SecretDisabled')
    return new SecretStoreError(
      `Secret "${name}" is disabled in ${vault}: enable it (\`az keyvault secret set-attributes --enabled true --name ${name} --vault-name <vault>\`) or store a new version.`,
      err,
    );
  if (status === 403) {
    const role = action === 'get' ? 'Key Vault Secrets User' : 'Key Vault Secrets Officer';
    return new SecretStoreError(
      `The app's identity may not ${action} secrets in ${vault} (${inner ?? e.code ?? 'Forbidden'}): assign it the role "${role}" on that vault (\`az role assignment create --role "${role}" --assignee <AZURE_CLIENT_ID> --scope <vault resource id>\`); new role assignments take a few minutes to apply.`,
      err,
    );
  }
  if (status === 401)
    return new SecretStoreError(
      `${vault} refused the app's token (${e.code ?? 'Unauthorized'}): check that the identity (AZURE_CLIENT_ID) belongs to the vault's Microsoft Entra tenant.`,
      err,
    );
  if (status === 429)
    return new SecretStoreError(
      `${verb} secret "${name}" from ${vault} was throttled (429) even after retrying; it is retried on the next run. Key Vault's limits are per vault: fewer callers or a longer cache help.`,
      err,
    );
  return new SecretStoreError(
    `${verb} secret "${name}" from ${vault} failed (${status ?? 'network'}); it is retried on the next run.`,
    err,
  );
}

/** Key Vault through @azure/keyvault-secrets; `get` reads the latest version. */
export class KeyVaultSecretStore implements SecretStore {
  readonly description: string;
  private readonly client: SecretClient;
  private readonly timeoutMs: number;

  constructor(vaultUrl: string, options: KeyVaultOptions) {
    this.description = `Key Vault ${vaultUrl}`;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    // The SDK loads with the first vault client: a command that never reads the vault does not pay for it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { SecretClient } = require('@azure/keyvault-secrets') as typeof import('@azure/keyvault-secrets');
    this.client = new SecretClient(vaultUrl, options.credential, {
      serviceVersion: KEY_VAULT_API_VERSION,
      disableChallengeResourceVerification: options.disableChallengeResourceVerification,
      // 429 and 5xx are retried (Retry-After honoured), capped so a run is not held for long.
      retryOptions: { maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2_000 },
      // Requests carry a bearer token: never re-sent to wherever a 3xx points.
      redirectOptions: { maxRetries: 0 },
      ...(options.agent ? { agent: options.agent } : {}),
    });
  }

  get(name: string, options: { abortSignal?: AbortSignal } = {}): Promise<string> {
    return inSpan('secret get', { secretName: name }, () => this.read(name, options), {
      kind: SpanKind.CLIENT,
    });
  }

  private async read(name: string, options: { abortSignal?: AbortSignal }): Promise<string> {
    let value: string | undefined;
    try {
      value = (
        await withTimeout(this.timeoutMs, options.abortSignal, (abortSignal) =>
          this.client.getSecret(name, { abortSignal }),
        )
      ).value;
    } catch (err) {
      throw explain(err, 'get', name, this.description);
    }
    if (value === undefined) throw new SecretNotFound(name, this.description);
    return value;
  }

  /** Starts the (soft) delete and does not wait for it: names deleted here are never set again. */
  delete(name: string, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    return inSpan('secret delete', { secretName: name }, () => this.remove(name, options), {
      kind: SpanKind.CLIENT,
    });
  }

  private async remove(name: string, options: { abortSignal?: AbortSignal }): Promise<void> {
    try {
      await withTimeout(this.timeoutMs, options.abortSignal, (abortSignal) =>
        this.client.beginDeleteSecret(name, { abortSignal }),
      );
    } catch (err) {
      if ((err as KeyVaultFailure).statusCode === 404) return;
      throw explain(err, 'delete', name, this.description);
    }
  }

  set(name: string, value: string, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    return inSpan('secret set', { secretName: name }, () => this.write(name, value, options), {
      kind: SpanKind.CLIENT,
    });
  }

  private async write(name: string, value: string, options: { abortSignal?: AbortSignal }): Promise<void> {
    try {
      await withTimeout(this.timeoutMs, options.abortSignal, (abortSignal) =>
        this.client.setSecret(name, value, { abortSignal }),
      );
    } catch (err) {
      throw explain(err, 'set', name, this.description);
    }
  }
}
