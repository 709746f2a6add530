import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLocalSettings } from '../../shared/config';
import { loadConfig } from '../../shared/app';
import { ConfigError } from '../../shared/errors';
import { CATALOG_SETTINGS } from '../../shared/catalog/settings';
import { partOf } from '../../shared/config';
import { SYNC_SETTINGS } from '../../shared/sync/settings';

describe('configuration', () => {
  it('with no tenant settings uses the embedded sandbox and the documented defaults', () => {
    const c = loadConfig({}, { cwd: '/srv/app' });
    expect(c.tenant).toBeUndefined();
    expect(c.clientSecretName).toBe('tenant-client-secret');
    expect(partOf(c, SYNC_SETTINGS).schedule).toBe('0 */15 * * * *');
    expect(c.sinkSpecs).toEqual([{ kind: 'blob' }]);
    expect(c.localSecretsFile).toBe('/srv/app/.local/secrets.json');
  });

  it('reads SYNC_SINKS into typed sinks at start-up, refusing an entry or a missing setting by name', () => {
    expect(
      loadConfig({ SYNC_SINKS: 'dir:./out, blob', AzureWebJobsStorage: 'UseDevelopmentStorage=true' })
        .sinkSpecs,
    ).toEqual([{ kind: 'dir', argument: './out' }, { kind: 'blob' }]);
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ SYNC_SINKS: 'webhook,s3:bucket,dir:' })).toEqual([
      'SYNC_SINKS: the webhook sink needs DOWNSTREAM_WEBHOOK_URL',
      'SYNC_SINKS: unknown sink "s3:bucket"; use blob, webhook, postgres, delta[:PATH] or dir:PATH, comma-separated',
      'SYNC_SINKS: dir: needs a folder: dir:PATH',
    ]);
    expect(problems({ SYNC_SINKS: 'blob:extra' })).toEqual(['SYNC_SINKS: blob: takes nothing after "blob"']);
    // In Azure a folder is the read-only package mount: refused outside Development, with the sinks that work.
    const inAzure = { SYNC_SINKS: 'dir:/home/out', WEBSITE_INSTANCE_ID: 'abc123' };
    expect(problems(inAzure)).toEqual([
      expect.stringMatching(/^SYNC_SINKS: the dir sink .* use blob, webhook or postgres/),
    ]);
    expect(problems({ ...inAzure, AZURE_FUNCTIONS_ENVIRONMENT: 'Development' })).toEqual([]);
  });

  it('reads SYNC_SCHEDULE with the timer’s NCRONTAB grammar at start-up, refusing one that cannot run', () => {
    expect(partOf(loadConfig({ SYNC_SCHEDULE: '0 */5 * * * 1-5' }), SYNC_SETTINGS).schedule).toBe(
      '0 */5 * * * 1-5',
    );
    const problem = (schedule: string) => {
      try {
        loadConfig({ SYNC_SCHEDULE: schedule });
        return '';
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
    };
    expect(problem('0 61 * * * *')).toMatch(/^SYNC_SCHEDULE: .*minute: 61 is out of range 0-59/);
    expect(problem('0 0 0 30 2 *')).toMatch(/^SYNC_SCHEDULE: .*never fires/);
    expect(problem('*/5 * * * *')).toMatch(/^SYNC_SCHEDULE: .*six fields/);
  });

  it('reads a real tenant and normalises URLs', () => {
    const c = loadConfig({
      TENANT_NAME: 'contoso',
      TENANT_BASE_URL: 'https://contoso.example.com/',
      TENANT_AUTH_URL: 'https://login.example.com',
      TENANT_CLIENT_ID: 'm2m-1',
      KEY_VAULT_URL: 'https://kv-contoso.vault.azure.net',
      SYNC_STREAMS: 'controls,users',
    });
    expect(c.tenant).toEqual({
      name: 'contoso',
      baseUrl: 'https://contoso.example.com',
      authUrl: 'https://login.example.com',
      clientId: 'm2m-1',
    });
    expect(c.keyVaultUrl).toBe('https://kv-contoso.vault.azure.net/');
    // Sessions share the vault unless a second one is named.
    expect(c.keyVaultSessionsUrl).toBe('https://kv-contoso.vault.azure.net/');
    expect(
      loadConfig({
        KEY_VAULT_URL: 'https://kv-contoso.vault.azure.net',
        KEY_VAULT_SESSIONS_URL: 'https://kvs-contoso.vault.azure.net',
      }).keyVaultSessionsUrl,
    ).toBe('https://kvs-contoso.vault.azure.net/');
    expect(partOf(c, CATALOG_SETTINGS).streams).toEqual(['controls', 'users']);
  });

  it('fails once, naming every bad setting', () => {
    let error: unknown;
    try {
      loadConfig({
        TENANT_BASE_URL: 'http://tenant.example.com',
        KEY_VAULT_URL: 'not a url',
        SYNC_SCHEDULE: '*/5 * * * *',
        TENANT_CLIENT_SECRET_NAME: 'has_underscore',
        DOWNSTREAM_WEBHOOK_URL: 'http://downstream.example.com/hook',
        DOWNSTREAM_WEBHOOK_SECRET_NAME: 'bad name',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    for (const name of [
      'TENANT_BASE_URL',
      'KEY_VAULT_URL',
      'SYNC_SCHEDULE',
      'TENANT_CLIENT_SECRET_NAME',
      'TENANT_NAME',
      'TENANT_AUTH_URL',
      'TENANT_CLIENT_ID',
      'DOWNSTREAM_WEBHOOK_URL',
      'DOWNSTREAM_WEBHOOK_SECRET_NAME',
    ]) {
      expect(message).toContain(name);
    }
    expect(message).toContain('https');
  });

  it('refuses an AzureWebJobsStorage the storage SDKs could not parse, by name, and takes the forms they can', () => {
    const problems = (value: string) => {
      try {
        loadConfig({ AzureWebJobsStorage: value });
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    for (const bad of ['DefaultEndpointsProtocol=https;AccountName=x', 'AccountKey', 'just text', ';;'])
      expect(problems(bad)).toEqual([
        expect.stringMatching(/^AzureWebJobsStorage: not a storage connection string/),
      ]);
    for (const good of [
      'UseDevelopmentStorage=true',
      'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net',
      'BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2024&sig=x',
    ])
      expect(problems(good)).toEqual([]);
  });

  it('knows it runs in Azure as the host does: HOSTED_IN_AZURE, WEBSITE_SKU, WEBSITE_INSTANCE_ID, CONTAINER_NAME beside WEBSITE_SITE_NAME', () => {
    const hosting = (env: Record<string, string>) => {
      const c = loadConfig(env);
      return [c.hosted, c.hosting.azure, c.hosting.because];
    };
    expect(hosting({})).toEqual([false, false, expect.stringMatching(/^none of/)]);
    expect(hosting({ WEBSITE_SKU: 'FlexConsumption' })).toEqual([true, true, 'WEBSITE_SKU=FlexConsumption']);
    expect(hosting({ WEBSITE_INSTANCE_ID: 'abc' })).toEqual([true, true, 'WEBSITE_INSTANCE_ID is set']);
    // A CI runner or a development container sets CONTAINER_NAME too (this machine does): alone it is no sign.
    expect(hosting({ CONTAINER_NAME: 'ci-runner-1' })[1]).toBe(false);
    expect(hosting({ CONTAINER_NAME: 'app_xyz', WEBSITE_SITE_NAME: 'func-abc' })).toEqual([
      true,
      true,
      'CONTAINER_NAME and WEBSITE_SITE_NAME are set',
    ]);
    // Said outright, it wins either way; Development is never hosted (folders allowed, logs on stderr).
    expect(hosting({ HOSTED_IN_AZURE: 'true' })).toEqual([true, true, 'HOSTED_IN_AZURE=true']);
    expect(hosting({ HOSTED_IN_AZURE: 'false', WEBSITE_SKU: 'FlexConsumption' })[1]).toBe(false);
    expect(hosting({ WEBSITE_SKU: 'FlexConsumption', AZURE_FUNCTIONS_ENVIRONMENT: 'Development' })[0]).toBe(
      false,
    );
    expect(() => loadConfig({ HOSTED_IN_AZURE: 'yes' })).toThrow(/HOSTED_IN_AZURE: `true` or `false`/);
    // In Azure a folder sink is refused whichever sign said so (it was WEBSITE_INSTANCE_ID only).
    expect(() => loadConfig({ WEBSITE_SKU: 'FlexConsumption', SYNC_SINKS: 'dir:./out' })).toThrow(
      /SYNC_SINKS: the dir sink/,
    );
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ TENANT_NAME: '', KEY_VAULT_URL: ' ' }).keyVaultUrl).toBeUndefined();
  });

  it('reads local.settings.json Values and rejects a broken file clearly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ti-cfg-'));
    try {
      expect(readLocalSettings(dir)).toEqual({});
      await writeFile(
        join(dir, 'local.settings.json'),
        JSON.stringify({ IsEncrypted: false, Values: { SYNC_SINKS: 'dir:/tmp/out' } }),
      );
      expect(readLocalSettings(dir)).toEqual({ SYNC_SINKS: 'dir:/tmp/out' });
      await writeFile(join(dir, 'local.settings.json'), '{ nope');
      expect(() => readLocalSettings(dir)).toThrow(/local.settings.json: not valid JSON/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});
