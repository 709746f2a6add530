import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock';
import { bounded, codeOf } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate, type Page } from '../graphql/pager';
import { silentLogger, type Logger } from '../log';
import type { StreamDefinition } from '../streams';
import { ChangeDetector } from './changes';
import { noCounts, type StreamCounts } from './counts';
import { decodeCheckpoint, encodeRecord, logEntries, snapshotDigest } from './checkpoint';
import { inSpan, setFields } from '../telemetry';
import { prefetch } from './prefetch';
import type { ChangeSink, RunManifest, WriteOutcome } from '../sinks';
import type { SyncRunRecord, SyncStateStore } from './state';

export interface SyncContext {
  tenant: string;
  state: SyncStateStore;
  sink: ChangeSink;
  clock?: Clock;
  logger?: Logger;
  abortSignal?: AbortSignal;
  /** After each page; `expected` is the record count of the last complete pass (0: unknown). */
  onPage?: (stream: string, counts: StreamCounts, expected: number) => void;
}

export interface StreamResult {
  stream: string;
  ok: boolean;
  /** False when the slice ended at its deadline with pages left: call again to carry on. */
  done: boolean;
  counts: StreamCounts;
  error?: string;
  errorCode?: string;
  /** Time this stream's slices took, summed by the orchestrator (for run history). */
  durationMs?: number;
}

/** Adds what a sink set aside (SYNC_REJECTED_RECORDS=quarantine) to the stream's counts. */
function setAside(counts: StreamCounts, outcome: WriteOutcome | void): void {
  if (outcome?.rejected) counts.rejected = (counts.rejected ?? 0) + outcome.rejected;
}

const describe = (err: unknown) => ({
  error: bounded(err instanceof Error ? err.message : String(err)),
  errorCode: codeOf(err),
});

async function readLog(
  state: SyncStateStore,
  tenant: string,
  stream: string,
): Promise<AsyncIterable<Buffer>> {
  const log = await state.readCheckpoint(tenant, stream);
  if (!log) throw new Error(`the checkpoint log of ${stream} disappeared during its pass`);
  return log;
}

/**
 * The run to work on: the unfinished one if there is one (it resumes under its own id), else a new one.
 * `full` starts a new run that ignores every snapshot.
 */
export async function beginRun(
  ctx: SyncContext,
  options: { full?: boolean; runId?: string; startedAt?: string } = {},
): Promise<SyncRunRecord & { resumed: boolean }> {
  const existing = options.full ? undefined : await ctx.state.readRun(ctx.tenant);
  if (existing) return { ...existing, resumed: true };
  const startedAt = options.startedAt ?? new Date((ctx.clock ?? systemClock).now()).toISOString();
  const run: SyncRunRecord = {
    runId: options.runId ?? `${startedAt.replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`,
    startedAt,
    full: Boolean(options.full),
  };
  await ctx.state.writeRun(ctx.tenant, run);
  return { ...run, resumed: false };
}

/**
 * One stream's pass, or a slice of it until `deadlineMs`: page by page (the next page is fetched while this
 * one is written), each page's changes written to the sink and then checkpointed, so a pass that dies
 * resumes after its last delivered page. Deletions only at the end of a complete pass. Any failure leaves
 * the stored snapshot as it was.
 */
export async function syncStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  run: SyncRunRecord,
  ctx: SyncContext,
  options: { deadlineMs?: number } = {},
): Promise<StreamResult> {
  const { tenant, state, sink } = ctx;
  const clock = ctx.clock ?? systemClock;
  const logger = ctx.logger ?? silentLogger;
  const name = stream.name;
  let detector: ChangeDetector | undefined;
  try {
    let stored = await state.readSnapshot(tenant, name);
    const digest = snapshotDigest(stored);
    const log = await state.readCheckpoint(tenant, name);
    let cp = log && (await decodeCheckpoint(log));
    if (cp && cp.runId !== run.runId) cp = undefined; // an older run's leftovers: this pass starts afresh
    if (cp?.done) return { stream: name, ok: true, done: true, counts: cp.done.counts };
    if (cp?.sealing && cp.previousDigest !== digest) {
      // Died after storing the new snapshot: only the sink's seal and the done mark are left.
      const counts = { ...cp.sealing.counts };
      setAside(counts, await sink.endStream(tenant, run.runId, name, cp.sealing.changedPages, counts));
      await state.appendCheckpoint(tenant, name, encodeRecord({ kind: 'done', counts }));
      return { stream: name, ok: true, done: true, counts };
    }
    const full = cp?.full ?? run.full;
    const d = new ChangeDetector(name, full ? undefined : stored, stream.idPath);
    stored = undefined; // the detector's from here on, which lets it go after the last page
    detector = d;
    let page = 0;
    let cursor: string | null = null;
    let listingDone = false;
    const changedPages: number[] = [];
    if (cp) {
      await d.resume(cp.counts, logEntries(await readLog(state, tenant, name)));
      ({ page, cursor, listingDone } = cp);
      changedPages.push(...cp.changedPages);
      logger.log('info', 'sync stream resumed from checkpoint', { stream: name, pages: page });
    } else {
      await state.appendCheckpoint(
        tenant,
        name,
        encodeRecord({ kind: 'start', runId: run.runId, previousDigest: digest, full }),
        { create: true },
      );
    }
    if (!listingDone) {
      const pages: AsyncIterable<Page> = prefetch(
        paginate(graphql, stream.document, stream.paths, {
          pageSize: stream.pageSize,
          startCursor: cursor,
          abortSignal: ctx.abortSignal,
        }),
      );
      for await (const p of pages) {
        page++;
        await inSpan(
          'sync page',
          { runId: run.runId, stream: name, page, records: p.records.length },
          async (span) => {
            const changes = d.page(p.records);
            setFields(span, { count: changes.length });
            if (changes.length) {
              const written = await sink.write(
                { tenant, runId: run.runId, stream: name, page, changes },
                { abortSignal: ctx.abortSignal },
              );
              setAside(d.counts, written);
              changedPages.push(page);
            }
            const record = {
              kind: 'page' as const,
              page,
              cursor: p.endCursor,
              last: !p.hasNextPage,
              changed: changes.length > 0,
              counts: { ...d.counts },
            };
            await state.appendCheckpoint(tenant, name, encodeRecord(record, d.takePageEntries()));
          },
        );
        ctx.onPage?.(name, d.counts, d.expected);
        if (p.hasNextPage && options.deadlineMs !== undefined && clock.now() >= options.deadlineMs)
          return { stream: name, ok: true, done: false, counts: { ...d.counts } };
      }
    }
    const deletions = d.finish();
    if (deletions.length) {
      // The page after the last listed one: the same number on every retry, so the sink replaces it.
      setAside(
        d.counts,
        await sink.write(
          { tenant, runId: run.runId, stream: name, page: page + 1, changes: deletions },
          { abortSignal: ctx.abortSignal },
        ),
      );
      changedPages.push(page + 1);
    }
    await state.appendCheckpoint(
      tenant,
      name,
      encodeRecord({ kind: 'sealing', counts: d.counts, changedPages }),
    );
    setAside(d.counts, await sink.endStream(tenant, run.runId, name, changedPages, d.counts));
    // The next snapshot is every page's entries, read back from the log: never held in memory.
    await state.writeSnapshot(tenant, name, logEntries(await readLog(state, tenant, name)));
    await state.appendCheckpoint(tenant, name, encodeRecord({ kind: 'done', counts: d.counts }));
    return { stream: name, ok: true, done: true, counts: { ...d.counts } };
  } catch (err) {
    const counts = detector ? { ...detector.counts } : noCounts();
    const failure = describe(err);
    logger.log('warn', 'sync stream failed', { stream: name, code: failure.errorCode });
    return { stream: name, ok: false, done: false, counts, ...failure };
  }
}

/**
 * Ends a run: the manifest to the sinks; when every stream completed, the checkpoints and the run record are
 * cleared so the next run starts fresh. Otherwise they stay, and the next run resumes this one.
 */
export async function finishRun(
  ctx: SyncContext,
  run: SyncRunRecord,
  results: StreamResult[],
): Promise<RunManifest> {
  const manifest: RunManifest = {
    tenant: ctx.tenant,
    runId: run.runId,
    startedAt: run.startedAt,
    finishedAt: new Date((ctx.clock ?? systemClock).now()).toISOString(),
    ok: results.every((r) => r.ok && r.done),
    streams: Object.fromEntries(
      results.map((r) => [
        r.stream,
        { ok: r.ok && r.done, counts: r.counts, ...(r.error ? { error: r.error } : {}) },
      ]),
    ),
  };
  try {
    await ctx.sink.finish(manifest);
  } catch (err) {
    // The manifest did not reach every sink: keep the run, so the next one resumes and sends it again.
    (ctx.logger ?? silentLogger).log('warn', 'sync manifest not delivered', {
      runId: run.runId,
      code: describe(err).errorCode,
    });
    return { ...manifest, ok: false, error: `manifest not delivered: ${describe(err).error}` };
  }
  if (manifest.ok) {
    for (const r of results) await ctx.state.clearCheckpoint(ctx.tenant, r.stream);
    await ctx.state.writeRun(ctx.tenant, undefined);
  }
  return manifest;
}

/** A whole run in one process (the CLI): streams in parallel, at most `concurrency` at once. */
export async function syncAll(
  graphql: TenantGraphqlClient,
  streams: StreamDefinition[],
  ctx: SyncContext & { full?: boolean; concurrency?: number },
): Promise<{ runId: string; resumed: boolean; ok: boolean; durationMs: number; streams: StreamResult[] }> {
  const clock = ctx.clock ?? systemClock;
  const started = clock.now();
  const run = await beginRun(ctx, { full: ctx.full });
  const results: StreamResult[] = new Array(streams.length);
  let next = 0;
  const worker = async () => {
    while (next < streams.length) {
      const i = next++;
      results[i] = await syncStream(graphql, streams[i], run, ctx);
    }
  };
  await Promise.all(Array.from({ length: Math.min(ctx.concurrency ?? 3, streams.length) }, worker));
  const manifest = await finishRun(ctx, run, results);
  return {
    runId: run.runId,
    resumed: run.resumed,
    ok: manifest.ok,
    durationMs: clock.now() - started,
    streams: results,
  };
}
