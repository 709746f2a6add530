import { ConfigError } from '../../shared/errors';
import { loadConfig } from '../../shared/app';
import { deltaStore } from '../../shared/sinks/delta';

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems;
  }
};

describe('delta sink settings', () => {
  it('DELTA_URL names a container (and folder) over https, never with a SAS; the other settings are bounded numbers', () => {
    expect(problems({ SYNC_SINKS: 'delta:lake', DELTA_URL: 'http://acct.blob.core.windows.net/c' })).toEqual([
      expect.stringMatching(/^DELTA_URL: /),
    ]);
    expect(problems({ SYNC_SINKS: 'delta:lake', DELTA_URL: 'https://acct.blob.core.windows.net/' })).toEqual([
      expect.stringContaining('must name a container'),
    ]);
    expect(
      problems({ SYNC_SINKS: 'delta:lake', DELTA_URL: 'https://acct.blob.core.windows.net/c?sv=2024&sig=x' }),
    ).toEqual([expect.stringContaining('no SAS')]);
    expect(
      problems({ SYNC_SINKS: 'delta:lake', DELTA_RETENTION_HOURS: '-1', DELTA_CHECKPOINT_INTERVAL: '0' }),
    ).toEqual([
      expect.stringContaining('DELTA_RETENTION_HOURS'),
      expect.stringContaining('DELTA_CHECKPOINT_INTERVAL'),
    ]);
  });

  it('DELTA_URL is refused by name on any host but Azure Storage’s and OneLake’s (the app sends it its storage token), and on loopback outside development', () => {
    for (const ok of [
      'https://acct.blob.core.windows.net/c',
      'https://acct.dfs.core.windows.net/c/folder',
      'https://acct.blob.core.usgovcloudapi.net/c',
      'https://onelake.blob.fabric.microsoft.com/WS/Lake.Lakehouse/Tables',
      'https://westeurope-onelake.dfs.fabric.microsoft.com/WS/Lake.Lakehouse/Tables',
    ])
      expect([ok, problems({ SYNC_SINKS: 'delta', DELTA_URL: ok, AzureWebJobsStorage: '' })]).toEqual([
        ok,
        [],
      ]);
    for (const bad of [
      'https://evil.example.com/c',
      'https://acct.blob.core.windows.net.evil.example.com/c',
      'https://onelake.blob.fabric.microsoft.com.attacker.net/ws',
      'https://x.queue.core.windows.net/c',
      'http://acct.blob.core.windows.net/c',
    ])
      expect([bad, problems({ SYNC_SINKS: 'delta', DELTA_URL: bad, AzureWebJobsStorage: '' })]).toEqual([
        bad,
        [expect.stringMatching(/^DELTA_URL: /)],
      ]);
    const azurite = 'http://127.0.0.1:10000/devstoreaccount1/lake';
    expect(problems({ SYNC_SINKS: 'delta', DELTA_URL: azurite, AzureWebJobsStorage: '' })).toEqual([
      expect.stringContaining('for development only'),
    ]);
    expect(
      problems({
        SYNC_SINKS: 'delta',
        DELTA_URL: azurite,
        AzureWebJobsStorage: '',
        AZURE_FUNCTIONS_ENVIRONMENT: 'Development',
      }),
    ).toEqual([]);
    // A dfs URL (what Fabric shows) is written through the Blob API of the same storage.
    const config = loadConfig({
      SYNC_SINKS: 'delta',
      DELTA_URL: 'https://acct.dfs.core.windows.net/c/f',
      AzureWebJobsStorage: '',
    });
    expect(deltaStore({ kind: 'delta' }, { config, secrets: { get: async () => '' } }).description).toBe(
      'Blob acct.blob.core.windows.net/c/f',
    );
  });

  it('DELTA_RETENTION_HOURS under 168 is refused by name (Delta’s own floor: 0 would delete what another writer has not yet committed); DELTA_DELETION_VECTORS is true or false', () => {
    for (const hours of ['0', '1', '167'])
      expect(problems({ SYNC_SINKS: 'delta:lake', DELTA_RETENTION_HOURS: hours })).toEqual([
        expect.stringMatching(/^DELTA_RETENTION_HOURS: at least 168/),
      ]);
    expect(problems({ SYNC_SINKS: 'delta:lake', DELTA_RETENTION_HOURS: '168' })).toEqual([]);
    expect(problems({ SYNC_SINKS: 'delta:lake', DELTA_DELETION_VECTORS: 'maybe' })).toEqual([
      expect.stringMatching(/^DELTA_DELETION_VECTORS: /),
    ]);
    const off = loadConfig({ SYNC_SINKS: 'delta:lake', DELTA_DELETION_VECTORS: 'false' });
    expect(off.sinks.delta).toMatchObject({ deletionVectors: false, retentionHours: 168 });
  });

  it('`delta` needs storage or DELTA_URL; with neither it is refused by name, and `delta:PATH` needs neither', () => {
    expect(problems({ SYNC_SINKS: 'delta', AzureWebJobsStorage: '' })).toEqual([
      expect.stringContaining('the delta sink needs storage (AzureWebJobsStorage) or DELTA_URL'),
    ]);
    expect(problems({ SYNC_SINKS: 'delta:lake', AzureWebJobsStorage: '' })).toEqual([]);
  });

  it('a OneLake lakehouse’s Tables folder: the workspace is the container, the rest the folder, read with the app’s identity', () => {
    const config = loadConfig({
      SYNC_SINKS: 'delta',
      DELTA_URL: 'https://onelake.blob.fabric.microsoft.com/Sales%20WS/Orders.Lakehouse/Tables',
      AzureWebJobsStorage: '',
    });
    const store = deltaStore({ kind: 'delta' }, { config, secrets: { get: async () => '' } });
    expect(store.description).toBe('Blob onelake.blob.fabric.microsoft.com/Sales WS/Orders.Lakehouse/Tables');
  });
});
