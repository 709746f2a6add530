import type { AccessLayer } from '../access';
import type { Clock } from '../clock';
import type { AppConfig } from '../config';
import type { Logger } from '../log';
import { blobService, delegationService } from '../state/blob-service';
import { resolveStreams, type StreamDefinition } from '../streams';
import { ExportLedger } from './ledger';
import type { ExportInput } from './orchestration';
import { ExportStorage } from './storage';

/** The export webhook's parts, built once per process from configuration. */
export interface ExportSetup {
  tenant: string;
  /** Every stream (defaults and SYNC_STREAMS_FILE); a request picks among them. */
  streams: StreamDefinition[];
  storage: ExportStorage;
  ledger: ExportLedger;
  maxConcurrent: number;
  development: boolean;
  /** The secret callers sign requests with, when EXPORTS_REQUEST_SECRET_NAME is set. */
  requestSecret?: () => Promise<string>;
  /** The secret callbacks are signed with (the downstream webhook secret). */
  callbackSecret: () => Promise<string>;
  clock: Clock;
  logger: Logger;
  /** An export was accepted (its orchestration started): its run begins in the history and its trace. */
  accepted: (input: ExportInput) => Promise<void>;
}

export function exportSetup(
  config: AppConfig,
  access: Pick<AccessLayer, 'secrets' | 'tenant'>,
  options: { clock: Clock; logger: Logger; accepted?: (input: ExportInput) => Promise<void> },
): ExportSetup {
  const requestSecretName = config.exportsRequestSecretName;
  let delegation: ReturnType<typeof delegationService> | undefined;
  return {
    tenant: access.tenant.name,
    streams: resolveStreams({ file: config.syncStreamsFile }),
    storage: new ExportStorage(blobService(config), () => (delegation ??= delegationService(config))),
    ledger: ExportLedger.fromConfig(config),
    maxConcurrent: config.exportsMaxConcurrent,
    development: config.development,
    requestSecret: requestSecretName ? () => access.secrets.get(requestSecretName) : undefined,
    callbackSecret: () => access.secrets.get(config.downstreamWebhookSecretName),
    clock: options.clock,
    logger: options.logger,
    accepted: options.accepted ?? (async () => undefined),
  };
}
