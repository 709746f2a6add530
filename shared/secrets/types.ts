/** Where client secrets and refresh tokens live: Key Vault in Azure, a local file in development. */
export interface SecretStore {
  /** Human description for messages, e.g. "Key Vault https://kv.vault.azure.net/". */
  readonly description: string;
  /** Latest version of the secret; `SecretNotFound` when absent. */
  get(name: string, options?: { abortSignal?: AbortSignal }): Promise<string>;
  set(name: string, value: string, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Removes the secret (Key Vault: soft-deleted); a missing one is not an error. */
  delete(name: string, options?: { abortSignal?: AbortSignal }): Promise<void>;
}
