import { randomBytes } from 'node:crypto';
import { SecretNotFound } from '../errors';
import type { SecretStore } from './types';
import { hmacHasher, type Hasher } from '../personal/policy';

/** SYNC_HASH_SECRET_NAME's default: the secret holding the key personal data is hashed with. */
export const DEFAULT_HASH_SECRET_NAME = 'sync-hash-key';

/**
 * The hash key, read from the secret store once a process; made there on first use (32 random bytes, base64) when
 * it is not there yet. Read back after making it, so two processes that made one at once both use the one the store
 * kept. Losing or changing the key changes every hashed value (each then reads as an update): keep it as a secret is
 * kept, and rotate it only on purpose.
 */
export function hashKeyOf(
  secrets: SecretStore,
  name: string,
  options: { abortSignal?: AbortSignal } = {},
): () => Promise<Hasher> {
  let pending: Promise<Hasher> | undefined;
  const load = async (): Promise<Hasher> => {
    let text: string;
    try {
      text = await secrets.get(name, options);
    } catch (err) {
      if (!(err instanceof SecretNotFound)) throw err;
      await secrets.set(name, randomBytes(32).toString('base64'), options);
      text = await secrets.get(name, options);
    }
    const key = Buffer.from(text, 'base64');
    if (key.length < 16)
      throw new Error(`the hash key ${name} holds fewer than 16 bytes (base64): set a longer one`);
    return hmacHasher(key);
  };
  return () => {
    pending ??= load().catch((err: unknown) => {
      pending = undefined; // a failed read is not kept: the next run asks again
      throw err;
    });
    return pending;
  };
}
