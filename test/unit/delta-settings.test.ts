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
