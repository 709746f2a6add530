import { dirname, join } from 'node:path';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { tableClient } from '../state/table-service';
import { FileRunHistory, RUNS_TABLE, TableRunHistory, type RunHistory } from './history';
import type { RunKinds } from './kind';
import { RunRecorder } from './recorder';

/** Run history in Table storage when there is storage (Azure, the local stack), a file beside the secrets otherwise. */
export function runHistory(config: AppConfig): RunHistory {
  const table = tableClient(config, RUNS_TABLE);
  return table
    ? new TableRunHistory(table)
    : new FileRunHistory(join(dirname(config.localSecretsFile), 'run-history.json'));
}

export function runRecorder(
  config: AppConfig,
  options: { logger: Logger; clock: Clock; kinds?: RunKinds },
): RunRecorder {
  return new RunRecorder(runHistory(config), { ...options, retentionDays: config.runHistoryDays });
}
