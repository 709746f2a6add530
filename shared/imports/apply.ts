import { randomUUID } from 'node:crypto';
import {
  bounded,
  GraphqlErrors,
  IntegrationError,
  LoginRequired,
  OutcomeUnknown,
  RequestRefused,
  statusOf,
  UpstreamError,
} from '../errors';
import { withRetries, type RetryPolicy } from '../net/retry';
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
 * How a commit that failed for any reason but a fence is tried again: the very same rows under the same sequence
 * number (a write that landed after all is then found to be this run's own), a few times, briefly — then the step
 * stops sending and fails.
 */
export const COMMIT_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 500, maxDelayMs: 4_000 };

/**
 * Applies the batch's items that have no outcome yet, `concurrency` at a time, each one mutation with the
 * delegated session — at most `limit` of them (the activity's share), then returns the counts. Before a window of
 * items is sent the window is recorded, and the outcomes of one window go with the next window's record
 * (shared/imports/store.ts). A session lost on the way stops sending: the items not sent stay pending.
 *
 * A write that fails stops the step: no item is sent after it, the mutations in flight are aborted, and the step
 * throws only once every lane has stopped — so what the orchestration then reports `skipped` was never sent, and
 * what was sent lies in the last window recorded (`outcome_unknown` where its outcome was not). Sequence numbers
 * advance only with a write that landed: a second run of the step always meets this one's next commit.
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
    /** How a failed commit is tried again (default COMMIT_RETRY). */
    commitRetry?: RetryPolicy;
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
  // What stops the step: a write that could not be made, or the host stopping. Every lane sees it, and the
  // mutations in flight are aborted with it.
  let failure: unknown;
  const halt = new AbortController();
  const signal = options.abortSignal ? AbortSignal.any([options.abortSignal, halt.signal]) : halt.signal;
  const stop = (err: unknown) => {
    failure ??= err;
    halt.abort(failure);
  };
  // One commit, its rows fixed: tried again as it is after anything but a fence (see COMMIT_RETRY).
  const commit = (at: number, done: ItemOutcome[], window: [number, number] | null) =>
    withRetries(
      async () => {
        try {
          await store.commit(id, at, done, window, attempt);
          return { done: true };
        } catch (err) {
          if (err instanceof LedgerFenced || options.abortSignal?.aborted) throw err;
          return { transient: { status: statusOf(err) ?? 0, cause: err } };
        }
      },
      options.commitRetry ?? COMMIT_RETRY,
      {
        abortSignal: options.abortSignal,
        onRetry: (n, waitMs, f) =>
          options.logger?.log('warn', 'import ledger write retried', {
            runId: id,
            attempt: n,
            retryInMs: waitMs,
            // The storage error's status and code, never its text (it may name a signed URL).
            status: f.status,
            reason: String((f.cause as { code?: unknown } | undefined)?.code ?? 'no answer').slice(0, 80),
          }),
        exhausted: (f) =>
          new IntegrationError(
            'service_unavailable',
            `import ${id}: the ledger could not be written (commit ${at}); no item is sent after it`,
            { cause: f.cause },
          ),
      },
    );
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
  // `concurrency` in flight. It never rejects: a write that cannot be made stops the step.
  const reserve = () =>
    (reserving ??= (async () => {
      const done = carried;
      carried = [];
      const end = Math.min(todo.length, Math.max(reserved, sent) + room - margin);
      const from = Math.min(sent, ...inFlight);
      const sentBefore = sent;
      try {
        await commit(seq, done, from < end ? [todo[from], todo[end - 1] + 1] : null);
      } catch (err) {
        carried = [...done, ...carried];
        if (err instanceof LedgerFenced) superseded = true;
        else stop(err);
        return;
      }
      seq++;
      reserved = end;
      margin = Math.min(widest, Math.max(concurrency, 2 * (sent - sentBefore) + concurrency));
      for (const o of done) outcomes.set(o.index, o);
      options.onProgress?.(countsOf(total, outcomes.values()));
    })().finally(() => {
      reserving = undefined;
    }));
  const clock = options.clock ?? systemClock;
  const timeUp = () => options.deadlineMs !== undefined && sent > 0 && clock.now() >= options.deadlineMs;
  const going = () =>
    sent < todo.length && !pause && !superseded && !signal.aborted && failure === undefined && !timeUp();
  const lane = async () => {
    while (going()) {
      if (sent >= reserved) {
        await reserve();
        continue;
      }
      if (reserved - sent <= margin && reserved < todo.length) void reserve();
      const position = sent++;
      const index = todo[position];
      inFlight.add(position);
      try {
        await graphql.request(batch.document, {
          variables: batch.items[index].variables,
          abortSignal: signal,
        });
        carried.push({ index, state: 'applied' });
      } catch (err) {
        // Stopped: its outcome is not recorded (it lies in the window recorded: outcome_unknown on the next read).
        if (signal.aborted) return;
        const sentItem = sentAs(index, err);
        // Certainly not sent (no token, 401, 429 or 503 past the retries): pending, sent again on resume.
        if ('pause' in sentItem) pause ??= sentItem;
        else carried.push(sentItem.outcome);
      } finally {
        inFlight.delete(position);
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(concurrency, todo.length) }, () =>
      lane().catch((err: unknown) => stop(err)),
    ),
  );
  // A reservation still being written must land before the last write, which clears the window.
  while (reserving) await reserving;
  // Every lane has stopped: only now may a failure leave the step (the orchestration then skips what was not sent).
  if (failure === undefined && options.abortSignal?.aborted) failure = options.abortSignal.reason;
  if (failure !== undefined) throw failure;
  if (!superseded)
    try {
      await commit(seq, carried, null);
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

/** How many times the end's write meets another run's commit before it gives up (each time it reads again). */
const SKIP_ATTEMPTS = 5;

/** Items never sent, once the import has ended without them: `skipped`, so every item has its outcome. */
export async function skipRest(
  id: string,
  total: number,
  store: ImportStore,
  reason: string,
): Promise<Counts> {
  for (let tries = 1; ; tries++) {
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
    try {
      // At the ledger's next sequence number: a run of the apply step still going (an activity delivered twice)
      // is fenced off at its next commit, having sent nothing beyond the window read here.
      await store.commit(id, progress.commits, rest, null, randomUUID());
      return countsOf(total, outcomes.values());
    } catch (err) {
      // That run committed first: read what it recorded, and end after it.
      if (!(err instanceof LedgerFenced) || tries >= SKIP_ATTEMPTS) throw err;
    }
  }
}
