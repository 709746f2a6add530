import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock';
import { bounded, codeOf, GraphqlErrors, IntegrationError, type ErrorCode } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate, type Page } from '../graphql/pager';
import { silentLogger, type Logger } from '../log';
import type { RunCatalog } from '../catalog';
import { parseStreams, type StreamDefinition } from '../streams';
import { ChangeDetector } from './changes';
import { noCounts, type StreamCounts } from '../changes';
import { decodeCheckpoint, encodeRecord, logEntries, type PageRecord } from './checkpoint';
import { inSpan, setFields } from '../telemetry';
import {
  catalogDigest,
  DEFAULT_PASS_POLICY,
  passFor,
  unseenFor,
  widen,
  type PassKind,
  type PassPolicy,
} from './passes';
import { prefetch } from '../graphql/prefetch';
import {
  SnapshotIndex,
  snapshotHeader,
  SnapshotTruncated,
  StoredSnapshot,
  type SnapshotMeta,
} from './snapshot';
import type { ChangeSink, RunManifest, WriteOutcome } from '../sinks';
import type { SyncRunRecord, SyncStateStore } from './state';

export interface SyncContext {
  tenant: string;
  state: SyncStateStore;
  sink: ChangeSink;
  clock?: Clock;
  logger?: Logger;
  abortSignal?: AbortSignal;
  /** How often incremental streams get a full pass, and their overlap (default: DEFAULT_PASS_POLICY). */
  passes?: PassPolicy;
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
  errorCode?: ErrorCode;
  /** Time this stream's slices took, summed by the orchestrator (for run history). */
  durationMs?: number;
  /** Whether the pass read everything or only what changed (shared/sync/passes.ts). */
  pass?: PassKind;
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

/** A run's catalog: what it reads, what it cannot, and what it found about the tenant's schema. */
export type CatalogSource = StreamDefinition[] | (() => Promise<RunCatalog>);

const fixedCatalog = (streams: StreamDefinition[]): RunCatalog => ({
  streams,
  source: 'file',
  introspection: true,
  blocked: {},
  added: {},
  changes: [],
});

const catalogFields = (c: RunCatalog): Partial<SyncRunRecord> => ({
  streams: c.streams,
  ...(Object.keys(c.blocked).length ? { blocked: c.blocked } : {}),
  schema: {
    ...(Object.keys(c.added).length ? { added: c.added } : {}),
    ...(c.changes.length ? { changes: c.changes } : {}),
    introspection: c.introspection,
  },
});

/**
 * The run to work on: the unfinished one if there is one (it resumes under its own id, with the streams it began
 * with), else a new one with the catalog's streams as they are now. `full` starts a new run that ignores every
 * snapshot.
 */
export async function beginRun(
  ctx: SyncContext,
  options: {
    full?: boolean;
    fullPass?: boolean;
    runId?: string;
    startedAt?: string;
    catalog: CatalogSource;
  },
): Promise<SyncRunRecord & { resumed: boolean }> {
  const catalog = async () =>
    typeof options.catalog === 'function' ? options.catalog() : fixedCatalog(options.catalog);
  const existing = options.full ? undefined : await ctx.state.readRun(ctx.tenant);
  if (existing) {
    // The run's streams, each as the catalog has it now: a stream whose definition changed since (the file edited,
    // a schema change adopted) or that is no longer blocked starts its pass over with it; the rest carry on.
    const now = await catalog();
    const byName = new Map(now.streams.map((s) => [s.name, s]));
    const before = existing.streams ? streamsOf(existing) : now.streams;
    const streams = before.map((s) => byName.get(s.name) ?? s);
    const names = new Set(streams.map((s) => s.name));
    const { blocked: _before, ...rest } = existing;
    const run: SyncRunRecord = {
      ...rest,
      ...catalogFields({
        ...now,
        streams,
        blocked: Object.fromEntries(Object.entries(now.blocked).filter(([n]) => names.has(n))),
      }),
    };
    await ctx.state.writeRun(ctx.tenant, run);
    return { ...run, resumed: true };
  }
  const startedAt = options.startedAt ?? new Date((ctx.clock ?? systemClock).now()).toISOString();
  const run: SyncRunRecord = {
    runId: options.runId ?? `${startedAt.replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`,
    startedAt,
    full: Boolean(options.full),
    ...(options.fullPass ? { fullPass: true } : {}),
    ...catalogFields(await catalog()),
  };
  await ctx.state.writeRun(ctx.tenant, run);
  return { ...run, resumed: false };
}

/** The streams a run reads, as it recorded them when it began. */
export function streamsOf(run: SyncRunRecord): StreamDefinition[] {
  return run.streams ? parseStreams({ streams: run.streams }, `run ${run.runId}'s streams`) : [];
}

/** A stream the run cannot read: failed at once with why (the tenant's schema moved under it). */
export function blockedResult(run: SyncRunRecord, stream: string): StreamResult | undefined {
  const b = run.blocked?.[stream];
  return b && { stream, ok: false, done: false, counts: noCounts(), error: b.message, errorCode: b.code };
}

/**
 * One stream's pass, or a slice of it until `deadlineMs`: page by page (the next page is fetched while this
 * one is written), each page's changes written to the sink and then checkpointed, so a pass that dies
 * resumes after its last delivered page. Deletions only at the end of a complete pass (and only what that pass
 * may conclude: shared/sync/passes.ts). Any failure leaves the stored snapshot as it was.
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
  let pass: PassKind | undefined;
  try {
    sink.drop?.(run.runId, name); // pages held by an earlier attempt of this pass come again from its checkpoint
    const log = await state.readCheckpoint(tenant, name);
    let cp = log && (await decodeCheckpoint(log));
    if (cp && cp.runId !== run.runId) cp = undefined; // an older run's leftovers: this pass starts afresh
    // Begun with another definition of the stream (changed since): the pass starts over with this one.
    if (cp && !cp.done && !cp.sealing && cp.catalog && cp.catalog !== catalogDigest(stream)) cp = undefined;
    if (cp?.done) return { stream: name, ok: true, done: true, counts: cp.done.counts, pass: cp.pass };
    const full = cp?.full ?? run.full;
    // The previous snapshot streams into its index (not when this pass starts over); its digest names it.
    const stored = new StoredSnapshot(await state.readSnapshot(tenant, name));
    const index = new SnapshotIndex();
    try {
      for await (const entries of stored.entries()) if (!full) index.add(entries);
    } catch (err) {
      if (!(err instanceof SnapshotTruncated)) throw err;
      // A pass that starts over (`--full`) does not need what was stored: only its digest, which is kept.
      if (!full)
        throw new IntegrationError(
          'state_damaged',
          `the stored snapshot of ${name} is truncated: start the stream's state over (\`tenant-integrations sync --full\` with the app's settings)`,
          { cause: err },
        );
    }
    index.seal();
    const digest = stored.digest;
    if (cp?.sealing && cp.previousDigest !== digest) {
      // Died after storing the new snapshot: only the sink's seal and the done mark are left.
      const counts = { ...cp.sealing.counts };
      setAside(counts, await sink.endStream(tenant, run.runId, name, cp.sealing.changedPages, counts));
      await state.appendCheckpoint(tenant, name, encodeRecord({ kind: 'done', counts }));
      return { stream: name, ok: true, done: true, counts, pass: cp.pass };
    }
    const previous = { meta: full ? {} : stored.meta, exists: !full && digest !== 'none' };
    const chosen = cp
      ? cp.pass === 'incremental' && cp.since
        ? { pass: 'incremental' as const, since: cp.since }
        : { pass: 'full' as const }
      : passFor(stream, previous, {
          nowMs: clock.now(),
          policy: ctx.passes ?? DEFAULT_PASS_POLICY,
          forceFull: run.fullPass,
        });
    pass = chosen.pass;
    // Its ids and whole hashes are read again when the pass ends (deletions, the entries kept): the same bytes.
    const again = async function* () {
      const reread = new StoredSnapshot(await state.readSnapshot(tenant, name));
      yield* reread.entries();
      if (reread.digest !== digest)
        throw new IntegrationError(
          'storage_unavailable',
          `the stored snapshot of ${name} changed while the pass ran; the next run reads it again`,
        );
    };
    const d = new ChangeDetector(
      name,
      { index, again },
      {
        idPath: stream.idPath,
        repeats: stream.pagination === 'offset' || stream.pagination === 'page',
        highWaterField: stream.incremental?.field,
      },
    );
    detector = d; // the previous entries are the detector's from here on, which lets them go when done
    let page = 0;
    let cursor: string | null = null;
    let listingDone = false;
    let total = cp?.total;
    const changedPages: number[] = [];
    if (cp) {
      await d.resume(cp, logEntries(await readLog(state, tenant, name)));
      ({ page, cursor, listingDone } = cp);
      changedPages.push(...cp.changedPages);
      logger.log('info', 'sync stream resumed from checkpoint', { stream: name, pages: page });
    } else {
      await state.appendCheckpoint(
        tenant,
        name,
        encodeRecord({
          kind: 'start',
          runId: run.runId,
          catalog: catalogDigest(stream),
          previousDigest: digest,
          full,
          pass: chosen.pass,
          ...(chosen.pass === 'incremental' ? { since: chosen.since } : {}),
        }),
        { create: true },
      );
    }
    // A page the sink holds (postgres stores pages in groups) is checkpointed only once the sink has stored it:
    // until then its checkpoint record waits here, so a pass that dies before the sink stores it reads it again.
    const waiting: Array<{ record: PageRecord; entries: Buffer }> = [];
    let holding = false;
    const settle = async () => {
      if (holding) {
        setAside(d.counts, await sink.flush?.(run.runId, name));
        holding = false;
        // What the sink set aside while storing counts from the last page it stored on.
        const last = waiting.at(-1);
        if (last) last.record.counts = { ...d.counts };
      }
      await append(waiting.length);
    };
    const append = async (count: number) => {
      if (count)
        await state.appendCheckpoint(
          tenant,
          name,
          Buffer.concat(waiting.splice(0, count).map((w) => encodeRecord(w.record, w.entries))),
        );
    };
    // The sink stored the pages it held through `throughPage` (while it holds later ones): their records go in.
    const storedThrough = async ({ throughPage, rejected }: { throughPage: number; rejected: number }) => {
      const count = waiting.filter((w) => w.record.page <= throughPage).length;
      if (rejected) {
        d.counts.rejected = (d.counts.rejected ?? 0) + rejected;
        const last = waiting[count - 1];
        if (last)
          last.record.counts = {
            ...last.record.counts,
            rejected: (last.record.counts.rejected ?? 0) + rejected,
          };
      }
      await append(count);
    };
    if (!listingDone) {
      const pages: AsyncIterable<Page> = prefetch(
        paginate(graphql, stream, {
          pageSize: stream.pageSize,
          startCursor: cursor,
          abortSignal: ctx.abortSignal,
          ...(chosen.pass === 'incremental' && stream.incremental
            ? { variables: { [stream.incremental.variable]: chosen.since } }
            : {}),
        }),
      );
      for await (const p of pages) {
        page++;
        await inSpan(
          'sync page',
          { runId: run.runId, stream: name, page, records: p.records.length },
          async (span) => {
            const changes = d.page(p.records);
            total = widen(total, p.total);
            setFields(span, { count: changes.length });
            if (changes.length) {
              const written = await sink.write(
                { tenant, runId: run.runId, stream: name, page, changes },
                { abortSignal: ctx.abortSignal, hold: true },
              );
              setAside(d.counts, written);
              holding = written?.held === true;
              // Held pages are checkpointed once flushed: a sink that holds but cannot flush would lose them.
              if (holding && !sink.flush)
                throw new Error(`${sink.description} held page ${page} of ${name} but cannot flush it`);
              if (written?.stored) await storedThrough(written.stored);
              changedPages.push(page);
            }
            const record: PageRecord = {
              kind: 'page' as const,
              page,
              cursor: p.endCursor,
              last: !p.hasNextPage,
              changed: changes.length > 0,
              counts: { ...d.counts },
              ...(d.repeated ? { repeated: d.repeated } : {}),
              ...(total ? { total } : {}),
              ...(d.highWater ? { highWater: d.highWater } : {}),
            };
            waiting.push({ record, entries: d.takePageEntries() });
            if (!holding) await settle();
          },
        );
        ctx.onPage?.(name, d.counts, d.expected);
        if (p.hasNextPage && options.deadlineMs !== undefined && clock.now() >= options.deadlineMs) {
          await settle();
          return { stream: name, ok: true, done: false, counts: { ...d.counts }, pass };
        }
      }
    }
    await settle(); // the listing's last pages, when the sink still holds them
    const unseen = unseenFor(stream, chosen.pass, { repeated: d.repeated, total, read: d.counts.read });
    if (d.repeated || unseen === 'keep' || unseen === 'confirm')
      logger.log('info', 'sync stream deletions deferred', {
        stream: name,
        reason: chosen.pass === 'incremental' ? 'incremental' : unseen === 'confirm' ? 'confirm' : 'moved',
        count: d.repeated,
      });
    const deletions = await d.finish(unseen);
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
    // The next snapshot: a header, every page's entries read back from the log, then the previous entries the
    // pass keeps — streamed, never held whole.
    const meta: SnapshotMeta = {
      catalog: catalogDigest(stream),
      ...(stream.incremental
        ? {
            highWater: latest(
              d.highWater,
              chosen.pass === 'incremental' ? previous.meta.highWater : undefined,
            ),
            fullPassAt:
              chosen.pass === 'full'
                ? new Date(Date.parse(run.startedAt) || clock.now()).toISOString()
                : previous.meta.fullPassAt,
          }
        : {}),
    };
    const log2 = await readLog(state, tenant, name);
    await state.writeSnapshot(
      tenant,
      name,
      (async function* () {
        yield snapshotHeader(meta);
        yield* logEntries(log2);
        yield* d.kept();
      })(),
    );
    await state.appendCheckpoint(tenant, name, encodeRecord({ kind: 'done', counts: d.counts }));
    return { stream: name, ok: true, done: true, counts: { ...d.counts }, pass };
  } catch (err) {
    const counts = detector ? { ...detector.counts } : noCounts();
    const failure = driftFailure(stream, err) ?? describe(err);
    logger.log('warn', 'sync stream failed', { stream: name, code: failure.errorCode });
    return { stream: name, ok: false, done: false, counts, ...failure, ...(pass ? { pass } : {}) };
  }
}

/**
 * A first page refused because the document asks for a field the tenant no longer has (what drift looks like when
 * the tenant refuses introspection): said as schema drift, naming the field.
 */
function driftFailure(stream: StreamDefinition, err: unknown) {
  if (!(err instanceof GraphqlErrors)) return undefined;
  // The catalog's modules and graphql load on this path only, not at every cold start (npm run bench -- coldstart).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { removedFromErrors } = require('../catalog/drift') as typeof import('../catalog/drift');
  const gone = removedFromErrors(err.errors.map((e) => e.message));
  if (!gone.length) return undefined;
  return {
    error: bounded(
      `stream ${stream.name}: the tenant's schema changed under it — ${gone
        .map((g) => `${g.type} no longer has ${g.field}`)
        .join(
          ', ',
        )}. Run \`tenant-integrations discover\` (or edit SYNC_STREAMS_FILE), or set SYNC_SCHEMA_CHANGES=propagate.`,
    ),
    errorCode: 'schema_drift' as const,
  };
}

/** The later of two ISO date-times (either may be missing). */
const latest = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : Date.parse(a) >= Date.parse(b) ? a : b;

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
  catalog: CatalogSource,
  ctx: SyncContext & { full?: boolean; fullPass?: boolean; concurrency?: number },
): Promise<{
  runId: string;
  resumed: boolean;
  ok: boolean;
  durationMs: number;
  streams: StreamResult[];
  schema?: SyncRunRecord['schema'];
}> {
  const clock = ctx.clock ?? systemClock;
  const started = clock.now();
  const run = await beginRun(ctx, { full: ctx.full, fullPass: ctx.fullPass, catalog });
  const streams = streamsOf(run);
  const results: StreamResult[] = new Array(streams.length);
  let next = 0;
  const worker = async () => {
    while (next < streams.length) {
      const i = next++;
      results[i] = blockedResult(run, streams[i].name) ?? (await syncStream(graphql, streams[i], run, ctx));
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
    ...(run.schema ? { schema: run.schema } : {}),
  };
}
