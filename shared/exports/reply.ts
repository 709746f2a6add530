import type { DurableOrchestrationStatus } from 'durable-functions';
import { REQUEST_ID } from '../ids';
import { stoppedEarly } from '../net/accepted';
import type { ReplyKind } from '../webhooks/reply';
import {
  exportInputSchema,
  exportInstanceId,
  exportState,
  exportStateSchema,
  type ExportState,
} from './orchestration';
import type { ExportParts } from './parts';
import type { DownloadLink } from './storage';

/** What callers see of an export — its status, its files' links — and how the request-reply kit finds it. */

/** `{id}/controls.csv` → `controls.csv`: what callers call a file. */
export const fileName = (blobName: string) => blobName.slice(blobName.indexOf('/') + 1);

/** The export's state from its orchestration: queued until it has reported, failed if it stopped unexpectedly. */
export function stateOf(instance: DurableOrchestrationStatus): ExportState | undefined {
  const reported = exportStateSchema.safeParse(instance.customStatus);
  const input = exportInputSchema.safeParse(instance.input);
  let state: ExportState | undefined = reported.success ? reported.data : undefined;
  if (!state && input.success) state = { ...exportState(input.data, {}, []), status: 'queued' };
  if (!state) return undefined;
  const stopped = stoppedEarly(instance, 'export');
  if (stopped && state.status !== 'completed' && state.status !== 'failed')
    return { ...state, status: 'failed', error: stopped };
  return state;
}

/** An export as the request-reply kit answers for it: its status body with fresh links once it is complete. */
export const exportReply = (setup: ExportParts): ReplyKind<ExportState> => ({
  collection: 'exports',
  noun: 'export',
  id: REQUEST_ID,
  instanceId: exportInstanceId,
  stateOf,
  statusOf: (state) => state.status,
  body: (state) => publicExport(setup, state),
});

export interface PublicFile {
  stream: string;
  file: string;
  records: number;
  bytes: number;
  sha256: string;
  url?: string;
  expiresAt?: string;
}

/** What callers see: the state, with a fresh 15-minute link per file when the export is complete. */
export async function publicExport(setup: ExportParts, state: ExportState) {
  const { files, manifest, ...rest } = state;
  if (state.status !== 'completed' || !files) return rest;
  let links: DownloadLink[] = [];
  let linksError: string | undefined;
  try {
    links = await setup.storage.links(
      [...files.map((f) => f.name), ...(manifest ? [manifest] : [])],
      setup.clock.now(),
    );
  } catch (err) {
    linksError = `download links could not be signed: ${(err as Error).message.split('\n')[0]}`;
    setup.logger.log('warn', 'export links failed', { reason: linksError });
  }
  const link = new Map(links.map((l) => [l.name, l]));
  const manifestLink = manifest ? link.get(manifest) : undefined;
  return {
    ...rest,
    files: files.map((f): PublicFile => {
      const l = link.get(f.name);
      return {
        stream: f.stream,
        file: fileName(f.name),
        records: f.records,
        bytes: f.bytes,
        sha256: f.sha256,
        ...(l ? { url: l.url, expiresAt: l.expiresAt } : {}),
      };
    }),
    ...(manifestLink ? { manifestUrl: manifestLink.url } : {}),
    ...(linksError ? { linksError } : {}),
  };
}
