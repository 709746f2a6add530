import type { DurableOrchestrationStatus } from 'durable-functions';
import { stoppedEarly } from '../net/accepted';
import type { ReplyKind } from '../webhooks/reply';
import type { ErrorCode } from '../errors';
import { countsOf } from './apply';
import {
  IMPORT_ID,
  importInputSchema,
  importInstanceId,
  importState,
  importStateSchema,
  type ImportState,
} from './orchestration';
import type { ImportParts } from './parts';
import type { ImportBatch, ImportStore, ItemState } from './store';

/** What callers see of an import — its status, a result per item — and how the request-reply kit finds it. */

/** The import's state from its orchestration: queued until it has reported, failed if it stopped unexpectedly. */
export function importStateOf(instance: DurableOrchestrationStatus): ImportState | undefined {
  const reported = importStateSchema.safeParse(instance.customStatus);
  const input = importInputSchema.safeParse(instance.input);
  let state = reported.success ? reported.data : undefined;
  if (!state && input.success) state = importState(input.data, 'queued');
  if (!state) return undefined;
  const stopped = stoppedEarly(instance, 'import');
  if (stopped && state.state !== 'completed' && state.state !== 'failed')
    return { ...state, state: 'failed', error: { code: 'run_stopped', message: stopped } };
  return state;
}

export interface ItemResult {
  key: string;
  state: ItemState;
  code?: ErrorCode;
  message?: string;
}

/**
 * Every item's result, in the order posted: its key, its state, and for a failure the tenant's message. Reads the
 * keys and the ledger, never the items' variables (unless given the batch, as the CLI is).
 */
export async function itemResults(
  store: ImportStore,
  id: string,
  batch?: ImportBatch,
): Promise<ItemResult[]> {
  return (await resultsOf(store, id, batch)) ?? [];
}

/** As `itemResults`; undefined once the import's items and results have expired. */
export async function resultsOf(store: ImportStore, id: string, batch?: ImportBatch) {
  const [keys, { outcomes }] = await Promise.all([
    batch ? batch.items.map((i) => i.key) : store.keys(id),
    store.progress(id),
  ]);
  return keys?.map((key, i): ItemResult => {
    const o = outcomes.get(i);
    return {
      key,
      state: o?.state ?? 'pending',
      ...(o?.code ? { code: o.code } : {}),
      ...(o?.message ? { message: o.message } : {}),
    };
  });
}

/**
 * What callers see (GET /api/imports/{id}, the callback): the import's `status` (also `state`, its name before
 * 2026-11-28), its counts and a result per item.
 */
export async function publicImport(setup: ImportParts, state: ImportState) {
  const results = await resultsOf(setup.store, state.id);
  const { state: status, ...rest } = state;
  const words = { status, ...rest, state: status };
  // Past IMPORTS_RETENTION_DAYS only the import's own counts remain.
  if (!results) return { ...words, results: [], resultsExpired: true };
  return { ...words, counts: status === 'queued' ? state.counts : countsFrom(results), results };
}

/** An import as the request-reply kit answers for it (with its earlier words, `state` and `statusUri`, too). */
export const importReply = (setup: ImportParts): ReplyKind<ImportState> => ({
  collection: 'imports',
  noun: 'import',
  id: IMPORT_ID,
  instanceId: importInstanceId,
  stateOf: importStateOf,
  statusOf: (state) => state.state,
  body: (state) => publicImport(setup, state),
  legacyWords: true,
});

export const countsFrom = (results: ItemResult[]) => countsOf(results.length, results);
