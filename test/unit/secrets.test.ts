import { failure } from '../helpers/failure';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffsetClock } from '../../shared/clock';
import { SecretNotFound, SecretStoreError } from '../../shared/errors';
import { createLogger } from '../../shared/log';
import { CachedSecretStore, LocalFileSecretStore, type SecretStore } from '../../shared/secrets';

describe('LocalFileSecretStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ti-sec-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('sets and gets; the file is 0600 and its folder 0700', async () => {
    const store = new LocalFileSecretStore(join(dir, '.local', 'secrets.json'));
    await store.set('a', '1');
    await store.set('b', '2');
    expect(await store.get('a')).toBe('1');
    expect((await stat(join(dir, '.local', 'secrets.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, '.local'))).mode & 0o777).toBe(0o700);
  });

  it('a missing secret names itself and how to set it', async () => {
    const err = await failure(new LocalFileSecretStore(join(dir, 'none.json')).get('tenant-client-secret'));
    expect(err).toBeInstanceOf(SecretNotFound);
    expect(err.code).toBe('secret_not_found');
    expect(err.message).toContain('tenant-integrations secrets set tenant-client-secret');
    expect(err.message).toContain('az keyvault secret set');
  });

  it('a corrupt file is a store error, not a crash or a silent empty store', async () => {
    await writeFile(join(dir, 's.json'), '[1,2]');
    await expect(new LocalFileSecretStore(join(dir, 's.json')).get('a')).rejects.toBeInstanceOf(
      SecretStoreError,
    );
  });
});

class FakeStore implements SecretStore {
  description = 'fake';
  values = new Map<string, string>();
  reads = 0;
  down = false;
  async get(name: string) {
    this.reads++;
    await new Promise((r) => setImmediate(r));
    if (this.down) throw new SecretStoreError('vault down');
    const v = this.values.get(name);
    if (v === undefined) throw new SecretNotFound(name, 'fake');
    return v;
  }
  async set(name: string, value: string) {
    this.values.set(name, value);
  }
  async delete(name: string) {
    this.values.delete(name);
  }
}

describe('CachedSecretStore', () => {
  const setup = () => {
    const inner = new FakeStore();
    const clock = new OffsetClock();
    const lines: Array<Record<string, unknown>> = [];
    const store = new CachedSecretStore(inner, {
      ttlMs: 60_000,
      clock,
      logger: createLogger((l) => lines.push(l)),
    });
    return { inner, clock, store, lines };
  };

  it('serves from memory within the TTL and shares one read between concurrent callers', async () => {
    const { inner, clock, store } = setup();
    inner.values.set('s', 'v1');
    expect(await Promise.all(Array.from({ length: 50 }, () => store.get('s')))).toEqual(Array(50).fill('v1'));
    expect(inner.reads).toBe(1);
    inner.values.set('s', 'v2');
    expect(await store.get('s')).toBe('v1');
    clock.advanceSeconds(60);
    expect(await store.get('s')).toBe('v2');
    expect(inner.reads).toBe(2);
  });

  it('invalidate forces the next read (rotation)', async () => {
    const { inner, store } = setup();
    inner.values.set('s', 'old');
    await store.get('s');
    inner.values.set('s', 'new');
    store.invalidate('s');
    expect(await store.get('s')).toBe('new');
  });

  it('an outage after a successful read serves the cached value and says so in the log, without the value', async () => {
    const { inner, clock, store, lines } = setup();
    inner.values.set('s', 'cached-secret-value');
    await store.get('s');
    clock.advanceSeconds(120);
    inner.down = true;
    expect(await store.get('s')).toBe('cached-secret-value');
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', secretName: 's' })]);
    expect(JSON.stringify(lines)).not.toContain('cached-secret-value');
  });

  it('an outage with nothing cached fails; a deleted secret is never hidden by the cache', async () => {
    const { inner, clock, store } = setup();
    inner.down = true;
    await expect(store.get('s')).rejects.toBeInstanceOf(SecretStoreError);
    inner.down = false;
    inner.values.set('s', 'v');
    await store.get('s');
    inner.values.delete('s');
    clock.advanceSeconds(120);
    await expect(store.get('s')).rejects.toBeInstanceOf(SecretNotFound);
  });
});
