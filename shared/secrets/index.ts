import type { TokenCredential } from '@azure/identity';
import type { Agent } from 'node:https';
import { systemClock, type Clock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { CachedSecretStore } from './cached';
import { azureCredential } from './credential';
import { KeyVaultSecretStore } from './key-vault';
import { LocalFileSecretStore } from './local-file';
import type { SecretStore } from './types';

export { CachedSecretStore } from './cached';
export { azureCredential } from './credential';
export { KeyVaultSecretStore } from './key-vault';
export { LocalFileSecretStore } from './local-file';
export type { SecretStore } from './types';

export const SECRET_CACHE_TTL_MS = 5 * 60_000;

/** Key Vault when KEY_VAULT_URL is set, otherwise the development file; both behind a short cache. */
export function createSecretStore(
  config: Pick<AppConfig, 'keyVaultUrl' | 'azureClientId' | 'localSecretsFile'>,
  options: {
    clock?: Clock;
    logger?: Logger;
    credential?: TokenCredential;
    disableChallengeResourceVerification?: boolean;
    /** The HTTPS agent for Key Vault requests (tests: one that resolves the vault to a local server). */
    keyVaultAgent?: Agent;
  } = {},
): CachedSecretStore {
  const inner: SecretStore = config.keyVaultUrl
    ? new KeyVaultSecretStore(config.keyVaultUrl, {
        credential: options.credential ?? azureCredential(config),
        disableChallengeResourceVerification: options.disableChallengeResourceVerification,
        agent: options.keyVaultAgent,
      })
    : new LocalFileSecretStore(config.localSecretsFile);
  return new CachedSecretStore(inner, {
    ttlMs: SECRET_CACHE_TTL_MS,
    clock: options.clock ?? systemClock,
    logger: options.logger,
  });
}
export { DEFAULT_HASH_SECRET_NAME, hashKeyOf } from './hash-key';
