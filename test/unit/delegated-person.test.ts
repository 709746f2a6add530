import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asPerson, DelegatedSession, safeClaims } from '../../shared/auth/delegated-session';
import { LoginRequired } from '../../shared/errors';
import { LocalFileSecretStore } from '../../shared/secrets';
import { FileSessionMetadataStore } from '../../shared/state/session-metadata';

/**
 * Who a delegated session acts as: the person an import is accepted under, and the only one whose session applies
 * it. Keycloak sends `preferred_username`; an IdP that does not still sends `sub` (every OpenID token does) — without
 * it the person was stored as "unknown" and the import then refused as someone else's, for ever.
 */
const jwt = (claims: Record<string, unknown>) =>
  [{ alg: 'none', typ: 'JWT' }, claims]
    .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url'))
    .join('.') + '.';

describe('the person a delegated token acts as', () => {
  it('preferred_username where the IdP sends it, else sub; an empty one is none', () => {
    expect(safeClaims(jwt({ sub: 'f3a1', preferred_username: 'admin', name: 'Ada' }))).toEqual({
      username: 'admin',
      name: 'Ada',
    });
    expect(safeClaims(jwt({ sub: 'f3a1-9c02' }))).toEqual({ username: 'f3a1-9c02' });
    expect(safeClaims(jwt({ sub: 'f3a1-9c02', preferred_username: '' })).username).toBe('f3a1-9c02');
    expect(safeClaims('not a token')).toEqual({});
  });

  it('a session without preferred_username is stored under its sub and applies that person’s imports only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-person-'));
    try {
      const session = new DelegatedSession(
        { name: 'acme', baseUrl: 'http://127.0.0.1:1', authUrl: 'http://127.0.0.1:1', clientId: 'm2m' },
        new LocalFileSecretStore(join(dir, 'secrets.json')),
        new FileSessionMetadataStore(join(dir, 'sessions.json')),
      );
      const token = jwt({ sub: 'f3a1-9c02', exp: Math.floor(Date.now() / 1000) + 300 });
      const stored = await session.connect({
        access_token: token,
        refresh_token: 'refresh',
        expires_in: 300,
        refresh_expires_in: 1800,
        token_type: 'Bearer',
      });
      expect(stored.username).toBe('f3a1-9c02');
      // The import was accepted under that person: their session applies it; another person's is refused.
      await expect(asPerson(session, stored.username).getToken()).resolves.toBe(token);
      await expect(asPerson(session, 'someone-else').getToken()).rejects.toBeInstanceOf(LoginRequired);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
