import { randomUUID } from 'node:crypto';
import {
  bounded,
  GraphqlErrors,
  IntegrationError,
  LoginRequired,
  OutcomeUnknown,
  RequestRefused,
  UpstreamError,
} from '../errors';
import { systemClock, type Clock } from '../clock';
import type { TenantGraphqlClient } from '../graphql/client';
import type { Logger } from '../log';
import {
  LedgerFenced,
  type ImportBatch,
  type ImportProgress,
  type ImportStore,
  type ItemOutcome,
  type ItemState,
} from './store';

/** Items sent at once (each one mutation): what the tenant sees from one import. */
export const IMPORT_CONCURRENCY = 4;
/**
 * The most items a recorded window holds, those in flight included: what a host that stops mid-import can leave
 * `outcome_unknown` (docs/import.md, "Exactly once"). A storage write per ~this many items.
 */
export const WINDOW_ITEMS = 150;

/** Items per state (ITEM_STATES). */
export type Counts = Record<ItemState, number>;

export interface ApplyResult {
  counts: Counts;
  /** The delegated session was lost (refresh refused, no session, another person's): why. Items not sent stay pending. */
  sessionLost?: string;
  /**
   * The tenant or its identity provider was unavailable for longer than one burst of retries (429, 503, no
   * connection, the session's refresh failing): why. Nothing was sent that could have been applied; the items not
   * sent stay pending and the import waits for the tenant.
   */
  tenantUnavailable?: string;
  /**
   * Another run of the apply step for the same import committed first (an activity delivered twice): this one
   * stopped sending; the counts are the ledger's as this run last read it.
   */
  superseded?: boolean;
}

/** Counts of `total` items from those with a state (outcomes, or results where `pending` is said outright). */
export function countsOf(total: number, items: Iterable<{ state: ItemState }>): Counts {
  const c: Counts = { applied: 0, failed: 0, outcome_unknown: 0, skipped: 0, pending: total };
  for (const { state } of items)
    if (state !== 'pending') {
      c[state]++;
      c.pending--;
    }
  return c;
}

const UNKNOWN_MESSAGE =
  'the host stopped while this item was being sent or about to be: it may or may not have been applied, and is not sent again';

const unknownOutcome = (index: number, message: string): ItemOutcome => ({
  index,
  state: 'outcome_unknown',
  code: 'outcome_unknown',
  message: bounded(message, 500),
});

/** The items of a window left by a stopped host that have no outcome: they may have reached the tenant. */
function stranded({ outcomes, window }: ImportProgress, total: number): ItemOutcome[] {
  const out: ItemOutcome[] = [];
  if (window)
    for (let i = window[0]; i < Math.min(window[1], total); i++)
      if (!outcomes.has(i)) out.push(unknownOutcome(i, UNKNOWN_MESSAGE));
  return out;
}

/** What sending one item came to: its outcome, or a pause where it was certainly not sent (it stays pending). */
type Sent = { outcome: ItemOutcome } | { pause: 'admin' | 'tenant'; reason: string };

/**
 * An item's outcome from the error its mutation failed with — only what the answer proves: applied where the tenant's
 * data says so, failed where it refused before running it, unknown where it may have run, and not sent at all where
 * nothing can have reached it (the import pauses, the item stays pending).
 */
export function sentAs(index: number, err: unknown): Sent {
  if (err instanceof LoginRequired) return { pause: 'admin', reason: err.message };
  if (err instanceof UpstreamError && err.unsent)
    return err.code === 'upstream_rejected'
      ? { pause: 'admin', reason: `the tenant refused the admin's token (${bounded(err.message, 300)})` }
      : { pause: 'tenant', reason: bounded(err.message, 300) };
  if (err instanceof OutcomeUnknown) return { outcome: unknownOutcome(index, err.message) };
  if (err instanceof GraphqlErrors) {
    // The tenant's own words. With data beside its errors the mutation ran: applied, the words kept — unless a
    // root field is null, which may mean it failed part-way (or was refused): unknown. No data: refused.
    const message = bounded(err.errors.map((e) => e.message).join('; '), 500);
    const data = err.data;
    if (data && typeof data === 'object') {
      const roots = Object.values(data as Record<string, unknown>);
      return roots.length && roots.every((v) => v !== null && v !== undefined)
        ? { outcome: { index, state: 'applied', message } }
        : { outcome: unknownOutcome(index, `the tenant answered with errors beside empty data: ${message}`) };
    }
    return { outcome: { index, state: 'failed', code: 'import_item_refused', message } };
  }
  // Refused before it ran: an HTTP 4xx without a GraphQL result, or a document this client will not send.
  if (err instanceof UpstreamError && err.code === 'upstream_rejected')
    return {
      outcome: { index, state: 'failed', code: 'import_item_refused', message: bounded(err.message, 500) },
    };
  if (err instanceof RequestRefused)
    return { outcome: { index, state: 'failed', code: err.code, message: bounded(err.message, 500) } };
  // Anything else came after the request may have reached the tenant.
  const why = err instanceof IntegrationError ? `${err.code}: ${err.message}` : (err as Error).message;
  return { outcome: unknownOutcome(index, `it may or may not have been applied (${why})`) };
}

/**
 * Applies the batch's items that have no outcome yet, `concurrency` at a time, each one mutation with the
 * delegated session — at most `limit` of them (the activity's share), then returns the counts. Before a window of
 * items is sent the window is recorded, and the outcomes of one window go with the next window's record
 * (shared/imports/store.ts). A session lost on the way stops sending: the items not sent stay pending.
 */
export async function applyBatch(
  id: string,
  batch: ImportBatch,
  store: ImportStore,
  graphql: TenantGraphqlClient,
  options: {
    concurrency?: number;
    windowItems?: number;
    limit?: number;
    /**
     * No new item is sent once `clock` reads this (ACTIVITY_SLICE_SECONDS after the activity began): those in flight
     * finish, their outcomes are recorded, and the rest stay pending for the next activity. At least one item goes.
     */
    deadlineMs?: number;
    clock?: Clock;
    abortSignal?: AbortSignal;
    logger?: Logger;
    /** After each window: items done so far (the CLI's progress bar). */
    onProgress?: (counts: Counts) => void;
  } = {},
): Promise<ApplyResult> {
  const total = batch.items.length;
  const concurrency = Math.max(1, Math.min(options.concurrency ?? IMPORT_CONCURRENCY, total));
  const bound = Math.max(options.windowItems ?? WINDOW_ITEMS, concurrency + 2);
  // A window reaches `room` items past the first not yet sent, so with those in flight it holds at most `bound`.
  const room = bound - concurrency;
  const limit = options.limit ?? Infinity;
  // An import with nothing recorded yet starts with its first window, written only if no commit exists (one write
  // where reading the progress and then writing the window took two, before any item could be sent); any other
  // import reads what the ledger holds.
  const first: [number, number] = [0, Math.min(total, limit, bound)];
  // This run's name in the ledger: a commit another run made first (the same seq) fences this one off.
  const attempt = randomUUID();
  const fresh = first[1] > 0 && (await store.begin(id, first, attempt));
  const progress = fresh
    ? { outcomes: new Map<number, ItemOutcome>(), commits: 1 }
    : await store.progress(id);
  const { outcomes } = progress;
  let seq = progress.commits;
  let carried = stranded(progress, total);
  for (const o of carried) outcomes.set(o.index, o);
  const todo: number[] = [];
  for (let i = 0; i < total && todo.length < limit; i++) if (!outcomes.has(i)) todo.push(i);
  let pause: { pause: 'admin' | 'tenant'; reason: string } | undefined;
  // Another run of the apply step holds the import (it committed first): send nothing more.
  let superseded = false;
  // Positions in `todo`: items below `reserved` are covered by a recorded window; `sent` is the next to send.
  let reserved = fresh ? first[1] : 0;
  if (fresh) options.onProgress?.(countsOf(total, []));
  let sent = 0;
  const inFlight = new Set<number>();
  let reserving: Promise<void> | undefined;
  // The next window is written while `margin` items of the one before are still to go: twice what the lanes sent
  // while the last write was on its way, and one per lane — learnt from the writes, not from a clock, so the lanes
  // do not wait for a write and each write covers as many items as the bound allows (fewer writes where storage
  // answers quickly). The first guess: four per lane.
  const widest = Math.floor(room / 2);
  let margin = Math.min(widest, 4 * concurrency);
  // Records what finished since the last write and a window reaching `room - margin` items past the recorded one
  // (or past the next to send) — while the lanes go on sending inside the window already recorded. Written when
  // at most `margin` recorded items are left, so the window holds at most `room` items not yet sent, and the
  // `concurrency` in flight.
  const reserve = () =>
    (reserving ??= (async () => {
      const done = carried;
      carried = [];
      const end = Math.min(todo.length, Math.max(reserved, sent) + room - margin);
      const from = Math.min(sent, ...inFlight);
      const sentBefore = sent;
      try {
        await store.commit(id, seq++, done, from < end ? [todo[from], todo[end - 1] + 1] : null, attempt);
      } catch (err) {
        carried = [...done, ...carried]; // written with the next attempt, never lost
        if (!(err instanceof LedgerFenced)) throw err;
        superseded = true;
        return;
      }
      reserved = end;
      margin = Math.min(widest, Math.max(concurrency, 2 * (sent - sentBefore) + concurrency));
      for (const o of done) outcomes.set(o.index, o);
      options.onProgress?.(countsOf(total, outcomes.values()));
    })().finally(() => {
      reserving = undefined;
    }));
  const clock = options.clock ?? systemClock;
  const timeUp = () => options.deadlineMs !== undefined && sent > 0 && clock.now() >= options.deadlineMs;
  const lane = async () => {
    while (sent < todo.length && !pause && !superseded && !timeUp()) {
      options.abortSignal?.throwIfAborted();
      if (sent >= reserved) {
        await reserve();
        continue;
      }
      if (reserved - sent <= margin && reserved < todo.length) void reserve().catch(() => undefined);
      const position = sent++;
      const index = todo[position];
      inFlight.add(position);
      try {
        await graphql.request(batch.document, {
          variables: batch.items[index].variables,
          abortSignal: options.abortSignal,
        });
        carried.push({ index, state: 'applied' });
      } catch (err) {
        if (options.abortSignal?.aborted) throw err;
        const sentItem = sentAs(index, err);
        // Certainly not sent (no token, 401, 429 or 503 past the retries): pending, sent again on resume.
        if ('pause' in sentItem) pause ??= sentItem;
        else carried.push(sentItem.outcome);
      } finally {
        inFlight.delete(position);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, lane));
  // A reservation still being written must land before the last write, which clears the window.
  while (reserving) await reserving;
  if (!superseded)
    try {
      await store.commit(id, seq, carried, null, attempt);
      for (const o of carried) outcomes.set(o.index, o);
    } catch (err) {
      if (!(err instanceof LedgerFenced)) throw err;
      superseded = true;
    }
  if (superseded) {
    // What this run applied after its last commit is in a window the other run reads as unknown.
    options.logger?.log('warn', 'import apply superseded by another run', { runId: id });
    return { counts: countsOf(total, (await store.progress(id)).outcomes.values()), superseded: true };
  }
  const counts = countsOf(total, outcomes.values());
  options.logger?.log(pause ? 'warn' : 'info', 'import items applied', {
    runId: id,
    applied: counts.applied,
    failed: counts.failed,
    outcomeUnknown: counts.outcome_unknown,
    pending: counts.pending,
  });
  if (!pause) return { counts };
  return pause.pause === 'admin'
    ? { counts, sessionLost: pause.reason }
    : { counts, tenantUnavailable: pause.reason };
}

/** Items never sent, once the import has ended without them: `skipped`, so every item has its outcome. */
export async function skipRest(
  id: string,
  total: number,
  store: ImportStore,
  reason: string,
): Promise<Counts> {
  const progress = await store.progress(id);
  const { outcomes } = progress;
  const rest = stranded(progress, total);
  for (const o of rest) outcomes.set(o.index, o);
  for (let i = 0; i < total; i++)
    if (!outcomes.has(i)) {
      const skipped: ItemOutcome = { index: i, state: 'skipped', message: bounded(reason, 300) };
      rest.push(skipped);
      outcomes.set(i, skipped);
    }
  await store.commit(id, progress.commits, rest, null, randomUUID());
  return countsOf(total, outcomes.values());
}
