import { randomUUID } from 'node:crypto';
import { systemClock } from '../clock';
import { bounded, codeOf, GraphqlErrors } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { silentLogger } from '../log';
import type { RunCatalog } from '../catalog';
import { parseStreams, type StreamDefinition } from '../streams';
import type { ChangeDetector } from './change-detector';
import { endPass } from './end-pass';
import { listPages, loweredOf, openPass, type OpenPass } from './stream-pass';
import { noCounts } from '../changes';
import type { PassKind } from './passes';
import { isGrouping, type ChangeSink, type RunManifest } from '../sinks/types';
import { nameCollisions, refusedByName } from '../sinks/names';
import type { SyncRunRecord } from './run-record';
import type { StreamResult, SyncContext } from './context';
import { neverReady, readiness } from './order';

export type { StreamResult, SyncContext };

const describe = (err: unknown) => ({
  error: bounded(err instanceof Error ? err.message : String(err)),
  errorCode: codeOf(err),
});

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
 * Streams whose names make one place of a sink (`orders` and `orders_changes` with the delta sink, `X` and `x`)
 * are blocked, both of them, naming the place: nothing of either is written over the other.
 */
function refuseCollisions(run: SyncRunRecord, sink: ChangeSink): SyncRunRecord {
  const refused = refusedByName(
    nameCollisions(
      sink,
      (run.streams ?? []).map((s) => (s as { name: string }).name),
    ),
  );
  if (!refused.size) return run;
  const blocked = { ...(run.blocked ?? {}) };
  for (const [stream, message] of refused) blocked[stream] = { code: 'stream_names_collide', message };
  return { ...run, blocked };
}

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
    const run = refuseCollisions(
      {
        ...rest,
        ...catalogFields({
          ...now,
          streams,
          blocked: Object.fromEntries(Object.entries(now.blocked).filter(([n]) => names.has(n))),
        }),
      },
      ctx.sink,
    );
    await ctx.state.writeRun(ctx.tenant, run);
    return { ...run, resumed: true };
  }
  const startedAt = options.startedAt ?? new Date((ctx.clock ?? systemClock).now()).toISOString();
  const run = refuseCollisions(
    {
      runId: options.runId ?? `${startedAt.replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`,
      startedAt,
      full: Boolean(options.full),
      ...(options.fullPass ? { fullPass: true } : {}),
      ...catalogFields(await catalog()),
    },
    ctx.sink,
  );
  await ctx.state.writeRun(ctx.tenant, run);
  return { ...run, resumed: false };
}

/** The streams a run reads, as it recorded them when it began. */
export function streamsOf(run: SyncRunRecord): StreamDefinition[] {
  return run.streams ? parseStreams({ streams: run.streams }, `run ${run.runId}'s streams`) : [];
}

/** Each child stream's parent stream, by name. */
export const parentsOf = (streams: StreamDefinition[]): Record<string, string | undefined> =>
  Object.fromEntries(streams.filter((s) => s.parent).map((s) => [s.name, s.parent?.stream]));

/** A stream the run cannot read: failed at once with why (the tenant's schema moved under it). */
export function blockedResult(run: SyncRunRecord, stream: string): StreamResult | undefined {
  const b = run.blocked?.[stream];
  return b && { stream, ok: false, done: false, counts: noCounts(), error: b.message, errorCode: b.code };
}

/**
 * One stream's pass, or a slice of it until `deadlineMs`: page by page (the next page is fetched while this
 * one is written), each page's changes written to the sink and then checkpointed, so a pass that dies
 * resumes after its last delivered page. Deletions only at the end of a complete pass (and only what that pass
 * may conclude: shared/sync/passes.ts). Any failure leaves the stored snapshot as it was. Its phases are in
 * ./stream-pass.ts: open, list the pages, end.
 */
export async function syncStream(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  run: SyncRunRecord,
  ctx: SyncContext,
  options: { deadlineMs?: number } = {},
): Promise<StreamResult> {
  const logger = ctx.logger ?? silentLogger;
  const name = stream.name;
  const progress: { pass?: PassKind; detector?: ChangeDetector } = {};
  let open: OpenPass | undefined; // a failure reports the page size the pass got to
  try {
    // Pages held by an earlier attempt of this pass come again from its checkpoint.
    if (isGrouping(ctx.sink)) ctx.sink.drop(run.runId, name);
    const opened = await openPass(stream, run, ctx, progress);
    if (!('detector' in opened)) return opened; // done already, or only its seal was left
    open = opened;
    if (!open.listingDone && (await listPages(graphql, stream, run, ctx, open, options)) === 'sliced')
      return {
        stream: name,
        ok: true,
        done: false,
        counts: { ...open.detector.counts },
        pass: open.chosen.pass,
        ...loweredOf(open),
      };
    return await endPass(stream, run, ctx, open);
  } catch (err) {
    const counts = progress.detector ? { ...progress.detector.counts } : noCounts();
    const failure = driftFailure(stream, err) ?? describe(err);
    logger.log('warn', 'sync stream failed', { stream: name, code: failure.errorCode });
    return {
      stream: name,
      ok: false,
      done: false,
      counts,
      ...failure,
      ...(progress.pass ? { pass: progress.pass } : {}),
      ...loweredOf(open),
    };
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
  const parents = parentsOf(streams);
  const inRun = new Set(streams.map((s) => s.name));
  const byName: Record<string, StreamResult | undefined> = {};
  // In waves: the streams that may start (a child once its parent is done), at most `concurrency` at once.
  for (let left = streams; left.length;) {
    const ready: StreamDefinition[] = [];
    for (const s of left) {
      const r = readiness(s.name, parents, byName, inRun);
      if (r === 'ready') ready.push(s);
      else if (r !== 'wait') byName[s.name] = r;
    }
    // Nothing may start although streams are left: their parents can never complete (a cycle in a streams file).
    if (!ready.length) {
      for (const s of left) byName[s.name] ??= neverReady(s.name);
      break;
    }
    let next = 0;
    const worker = async () => {
      while (next < ready.length) {
        const s = ready[next++];
        byName[s.name] = blockedResult(run, s.name) ?? (await syncStream(graphql, s, run, ctx));
      }
    };
    await Promise.all(Array.from({ length: Math.min(ctx.concurrency ?? 3, ready.length) }, worker));
    left = left.filter((s) => !byName[s.name]);
  }
  const results = streams.map((s) => byName[s.name] as StreamResult);
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
