import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer } from '../../shared/access';
import { OffsetClock } from '../../shared/clock';
import { loadConfig } from '../../shared/app';
import { SecretNotFound, SecretStoreError } from '../../shared/errors';
import { createLogger } from '../../shared/log';
import { KeyVaultSecretStore } from '../../shared/secrets';
import { FileSessionMetadataStore } from '../../shared/state/session-metadata';
import { resolveStreams } from '../../sandbox/streams';
import { syncAll } from '../../shared/sync/run-steps';
import { DirectorySink } from '../../shared/sinks';
import { FileSyncStateStore } from '../../shared/sync/file-state';
import { failure } from '../helpers/failure';
import {
  documented,
  fakeCredential,
  keyVaultReplay,
  recorded,
  recordedGetOf,
  recordedSetOf,
} from '../helpers/key-vault-replay';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';

/**
 * The app's Key Vault store through the real @azure/keyvault-secrets client (challenge verification on, as
 * in Azure) against Key Vault's own recorded answers, replayed over HTTPS. No Key Vault can run here; these
 * are the answers a real vault gave, and the ones Microsoft documents for what the recordings lack.
 */
let vault: Awaited<ReturnType<typeof keyVaultReplay>>;
beforeAll(async () => {
  vault = await keyVaultReplay();
});
afterAll(() => vault?.close());

const { get, missing, disabled, set } = recorded.exchanges;
const store = () => {
  const identity = fakeCredential();
  return {
    identity,
    store: new KeyVaultSecretStore(vault.url, { credential: identity.credential, agent: vault.agent }),
  };
};
const nameIn = (e: { request: { path: string } }) => e.request.path.split('/')[2];

afterEach(() => {
  expect(vault.mismatches.splice(0)).toEqual([]);
  expect(vault.pending()).toBe(0);
  vault.served.splice(0);
});

describe('Key Vault, replayed from its own recordings', () => {
  it('get: the challenge, a token for the vault resource of the challenging tenant, then the secret', async () => {
    vault.expect(get);
    const { store: s, identity } = store();
    expect(await s.get(nameIn(get))).toBe('SECRET_VALUE');
    expect(vault.served).toEqual([`challenge GET ${get.request.path}`, `GET ${get.request.path} → 200`]);
    expect(identity.requests).toEqual([
      { scopes: ['https://vault.azure.net/.default'], tenantId: '12345678-1234-1234-1234-123456789012' },
    ]);
  });

  it('set: PUT with the recorded body', async () => {
    vault.expect(set);
    await store().store.set(nameIn(set), 'SECRET_VALUE');
    expect(vault.served.at(-1)).toBe(`PUT ${set.request.path} → 200`);
  });

  it('missing (404 SecretNotFound): SecretNotFound saying how to set it', async () => {
    vault.expect(missing);
    const err = await failure(store().store.get(nameIn(missing)));
    expect(err).toBeInstanceOf(SecretNotFound);
    expect(err.message).toContain(`tenant-integrations secrets set ${nameIn(missing)}`);
    expect(err.message).toContain('az keyvault secret set');
  });

  it('disabled (403 SecretDisabled): says to enable it or store a new version', async () => {
    vault.expect(disabled);
    const err = await failure(store().store.get(nameIn(disabled)));
    expect(err).toBeInstanceOf(SecretStoreError);
    expect(err.message).toMatch(/is disabled in Key Vault https:\/\/tenant-kv\.vault\.azure\.net/);
    expect(err.message).toContain('az keyvault secret set-attributes --enabled true');
  });

  it('no role (403 ForbiddenByRbac): names the role, the vault, and that assignments take minutes', async () => {
    vault.expect(vault.answering(get, documented.forbiddenByRbac));
    const err = await failure(store().store.get(nameIn(get)));
    expect(err).toBeInstanceOf(SecretStoreError);
    expect(err.message).toContain('"Key Vault Secrets User" on that vault');
    expect(err.message).toContain('tenant-kv.vault.azure.net');
    expect(err.message).toContain('ForbiddenByRbac');
    expect(err.message).toContain('take a few minutes');
    expect(err.message).not.toContain('SECRET_VALUE');
  });

  it('writing without the role names the writer role', async () => {
    vault.expect({ ...set, response: documented.forbiddenByRbac });
    const err = await failure(store().store.set(nameIn(set), 'SECRET_VALUE'));
    expect(err.message).toContain('"Key Vault Secrets Officer"');
    expect(err.message).not.toContain('SECRET_VALUE');
  });

  it('throttled (429 with Retry-After): retried after the wait; the answer that follows is used', async () => {
    vault.expect(vault.answering(get, documented.throttled), get);
    expect(await store().store.get(nameIn(get))).toBe('SECRET_VALUE');
    expect(vault.served.filter((s) => s.endsWith('→ 429'))).toHaveLength(1);
  });

  it('throttled on every retry: a typed error that says it was throttled', async () => {
    const throttled = vault.answering(get, documented.throttled);
    vault.expect(throttled, throttled, throttled);
    const err = await failure(store().store.get(nameIn(get)));
    expect(err).toBeInstanceOf(SecretStoreError);
    expect(err).toMatchObject({ code: 'secret_store_unavailable' });
    expect(err.message).toContain('throttled (429)');
  });

  it('503 on every retry: SECRET_STORE_UNAVAILABLE naming the status', async () => {
    const down = vault.answering(get, documented.unavailable);
    vault.expect(down, down, down);
    const err = await failure(store().store.get(nameIn(get)));
    expect(err).toMatchObject({ code: 'secret_store_unavailable' });
    expect(err.message).toContain('(503)');
  });
});

describe('a whole sync with KEY_VAULT_URL pointing at the replayed vault', () => {
  let sb: SandboxFixture;
  let dir: string;
  beforeAll(async () => {
    sb = await sandboxFixture({ records: 150 });
    dir = await mkdtemp(join(tmpdir(), 'ti-kv-sync-'));
  });
  afterAll(async () => {
    await sb?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const getOf = recordedGetOf;
  const setOf = recordedSetOf;

  it('reads the secret once, serves it from cache, re-reads it after unauthorized_client, writes the refresh token', async () => {
    const clock = new OffsetClock();
    const identity = fakeCredential();
    const logs: string[] = [];
    const config = loadConfig({
      ...sb.settings,
      KEY_VAULT_URL: vault.url,
      LOCAL_SECRETS_FILE: join(dir, 's.json'),
    });
    const access = createAccessLayer(config, {
      clock,
      credential: identity.credential,
      keyVaultAgent: vault.agent,
      logger: createLogger((l) => logs.push(JSON.stringify(l))),
      sessionMetadata: new FileSessionMetadataStore(join(dir, 'sessions.json')),
    });
    const streams = resolveStreams({ select: ['controls', 'kpis'] });
    const run = () =>
      syncAll(access.graphql, streams, {
        tenant: sb.tenant,
        state: new FileSyncStateStore(join(dir, 'state')),
        sink: new DirectorySink(join(dir, 'out')),
        clock,
      });

    vault.expect(getOf('tenant-client-secret', sb.clientSecret));
    expect((await run()).ok).toBe(true);
    expect(vault.served.filter((s) => s.startsWith('GET'))).toHaveLength(1);
    // A second run within the cache's lifetime: no Key Vault call at all.
    expect((await run()).ok).toBe(true);
    expect(vault.served.filter((s) => s.startsWith('GET'))).toHaveLength(1);

    // Rotated in the portal and stored in the vault; the IdP's clock passes our token's expiry, so the next
    // token request is made with the cached (old) secret, refused, and the secret is read again.
    const rotated = (await sb.hook(`credentials/${sb.clientId}/rotate`)).body.clientSecret as string;
    await sb.advance(301);
    vault.expect(getOf('tenant-client-secret', rotated));
    expect((await run()).ok).toBe(true);
    expect(vault.served.filter((s) => s.startsWith('GET'))).toHaveLength(2);
    // Token requests: the first run's, then the refused one with the cached secret and the one after the re-read.
    expect((await sb.hook('stats')).body.token.client_credentials).toBe(3);

    // The admin's device login: the refresh token is written to the vault (PUT), never to a file or a log.
    const tokens = await sb.personTokens();
    vault.expect(setOf('delegated-refresh-token-acme', tokens.refresh_token));
    await access.delegated.connect({ ...tokens, token_type: 'Bearer' });
    expect(vault.served.at(-1)).toBe('PUT /secrets/delegated-refresh-token-acme → 200');
    const logged = logs.join('\n');
    expect(logged).not.toContain(sb.clientSecret);
    expect(logged).not.toContain(rotated);
    expect(logged).not.toContain(tokens.refresh_token);
    await sb.hook('reset');
  });
});
