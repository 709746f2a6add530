import { dirname, join } from 'node:path';
import type { AppConfig } from '../config';

/**
 * The folder the app keeps its state in where there is no storage (the CLI, a run without Azurite): beside the
 * secrets file, `.local/sync-state/` by default. The one place that knows it.
 */
export const localStateFolder = (config: Pick<AppConfig, 'localSecretsFile'>): string =>
  join(dirname(config.localSecretsFile), 'sync-state');
