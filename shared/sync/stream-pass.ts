import { systemClock } from '../clock';
import { IntegrationError } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate, type Page, type PaginateOptions } from '../graphql/pager';
import { paginateChildren } from '../graphql/children';
import { prefetch } from '../graphql/prefetch';
import { silentLogger } from '../log';
import { isGrouping } from '../sinks/types';
import { keyPaths, type StreamDefinition } from '../streams';
import { incrementalVariables, NewestFirst } from './incremental';
import { confirmTotal } from './totals';
import { parentKeys } from './parents';
import { inSpan, setFields } from '../telemetry';
import { ChangeDetector } from './change-detector';
import { hashes, protector } from '../personal/policy';
import { fieldsOf, PageCheckpoints, readLog, setAside } from './page-checkpoints';
import { decodeCheckpoint, encodeRecord, logEntries, type PageRecord } from './checkpoint';
import { catalogDigest, DEFAULT_PASS_POLICY, passFor, widen, type PassKind } from './passes';
import { SnapshotIndex, SnapshotTruncated, StoredSnapshot, type SnapshotMeta } from './snapshot';
import type { SyncRunRecord } from './run-record';
import type { StreamResult, SyncContext } from './context';

/*
 * One stream's pass, in its phases (shared/sync/run-steps.ts's `syncStream` calls them in turn):
 *
 * 1. `openPass` — the checkpoint and the stored snapshot read, the pass chosen (full or incremental), resumed from
 *    its checkpoint or begun; or the stream answered at once (done already, or only its seal left).
 * 2. `listPages` — page by page (the next one fetched while this one is written), each page's changes to the sink,
 *    then checkpointed (`PageCheckpoints`); a slice stops after its page once its deadline has passed.
 * 3. `endPass` (shared/sync/end-pass.ts) — deletions (only what the pass may conclude: shared/sync/passes.ts), the seal, the sink's end of the
 *    stream, the next snapshot, the done mark.
 */

/** What a pass knows once open, and where it is. */
export interface OpenPass {
  detector: ChangeDetector;
  chosen: { pass: 'full' } | { pass: 'incremental'; since: string };
  /** The stored snapshot's meta (none when this pass starts over), and whether there was one. */
  previous: { meta: SnapshotMeta; exists: boolean };
  page: number;
  cursor: string | null;
  listingDone: boolean;
  /** The totals the pages reported so far (offset and page pagination). */
  total?: { min: number; max: number };
  changedPages: number[];
  checkpoints: PageCheckpoints;
  /** The page size the pass asks with: the stream's, or less where the tenant refused more (kept between runs). */
  pageSize: number;
  /** Set when `pageSize` is below the stream's: which limit lowered it. */
  lowered?: { size: number; limit: string };
  /** When the tenant last refused a larger page (ISO): the size is tried upwards again PROBE_AFTER_MS later. */
  loweredSince?: string;
  /** An incremental pass read newest first met a record newer than the one before it: the next pass is a full one. */
  orderBroken?: boolean;
}

/**
 * How long a page size learnt from the tenant's refusal is kept before a new pass asks with the stream's own size
 * again: a tenant that raised its limit is then read at full size, and one that did not costs one refused request
 * (the next size is taken from its numbers again).
 */
export const PROBE_AFTER_MS = 24 * 3_600_000;

/** A stream result's `pageSize`: the size the pass reads with, when the tenant refused the stream's own. */
export const loweredOf = (open: Pick<OpenPass, 'lowered'> | undefined) =>
  open?.lowered ? { pageSize: open.lowered } : {};

/** A learnt page size as stored: used only when it is a size and below the stream's own. */
function learnt(stream: StreamDefinition, kept: unknown): { size: number; limit: string } | undefined {
  const k = kept as { size?: unknown; limit?: unknown } | undefined;
  if (!k || !Number.isInteger(k.size) || typeof k.limit !== 'string') return undefined;
  const size = k.size as number;
  return size >= 1 && size < stream.pageSize ? { size, limit: k.limit } : undefined;
}

/**
 * Opens the pass: resumes it from its checkpoint, or begins it (the pass chosen and its start recorded). Answers the
 * stream's result instead when it is done already, or when only its seal was left (it died after storing the next
 * snapshot). `progress` holds the pass as soon as it is chosen and its detector as soon as it is made: a failure
 * after reports them.
 */
export async function openPass(
  stream: StreamDefinition,
  run: SyncRunRecord,
  ctx: SyncContext,
  progress: { pass?: PassKind; detector?: ChangeDetector },
): Promise<OpenPass | StreamResult> {
  const { tenant, state, sink } = ctx;
  const clock = ctx.clock ?? systemClock;
  const logger = ctx.logger ?? silentLogger;
  const name = stream.name;
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
    setAside(
      counts,
      await sink.endStream(tenant, run.runId, name, cp.sealing.changedPages, counts, fieldsOf(stream)),
    );
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
  progress.pass = chosen.pass;
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
  const detector = new ChangeDetector(
    name,
    { index, again },
    {
      idPath: stream.idPath,
      repeats: stream.pagination === 'offset' || stream.pagination === 'page',
      // A full listing that gives each record once: a key met twice is two records under one key.
      uniqueKeys: chosen.pass === 'full' && ['cursor', 'token', 'none'].includes(stream.pagination),
      highWaterField: stream.incremental?.field,
    },
  );
  progress.detector = detector;
  const open: OpenPass = {
    detector, // the previous entries are the detector's from here on, which lets them go when done
    chosen,
    previous,
    page: 0,
    cursor: null,
    listingDone: false,
    total: cp?.total,
    changedPages: [],
    checkpoints: new PageCheckpoints(ctx, run.runId, name, detector.counts),
    pageSize: stream.pageSize,
  };
  // A resumed pass goes on with the size it had (page numbers count pages of it); a new one starts where the last
  // pass ended up, whatever kind it is: the limit is the tenant's, not the pass's — until PROBE_AFTER_MS have passed
  // since the tenant last refused more, when a new pass tries the stream's own size again.
  const lowered = learnt(stream, cp?.pageSize ?? stored.meta.pageSize);
  const since = cp ? new Date(clock.now()).toISOString() : stored.meta.pageSize?.since;
  const stale = !since || !(clock.now() - Date.parse(since) < PROBE_AFTER_MS);
  if (lowered && !cp && stale)
    logger.log('info', 'sync page size probed', { stream: name, pageSize: stream.pageSize });
  else if (lowered) Object.assign(open, { pageSize: lowered.size, lowered, loweredSince: since });
  if (cp) {
    await detector.resume(cp, logEntries(await readLog(state, tenant, name)));
    ({ page: open.page, cursor: open.cursor, listingDone: open.listingDone } = cp);
    if (cp.orderBroken) open.orderBroken = true;
    open.changedPages.push(...cp.changedPages);
    logger.log('info', 'sync stream resumed from checkpoint', { stream: name, pages: open.page });
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
  return open;
}

/**
 * Lists the stream's pages from where the pass is, each page's changes to the sink and its record checkpointed.
 * Answers `sliced` when the slice's deadline passed with pages left (the next slice carries on from the checkpoint),
 * `listed` when the listing is done.
 */
export async function listPages(
  graphql: TenantGraphqlClient,
  stream: StreamDefinition,
  run: SyncRunRecord,
  ctx: SyncContext,
  open: OpenPass,
  options: { deadlineMs?: number },
): Promise<'sliced' | 'listed'> {
  const { tenant, sink } = ctx;
  const clock = ctx.clock ?? systemClock;
  const logger = ctx.logger ?? silentLogger;
  const name = stream.name;
  const { detector: d, chosen, checkpoints } = open;
  // Personal fields as the stream's policy says, before the detector, the sink or a checkpoint sees them.
  const protect = protector(stream, hashes(stream) ? await ctx.hashKey?.() : undefined);
  const listing = (options: PaginateOptions) =>
    stream.parent
      ? paginateChildren(graphql, stream, parentKeys(ctx, stream), options)
      : paginate(graphql, stream, options);
  const pages: AsyncIterable<Page> = prefetch(
    listing({
      pageSize: open.pageSize,
      onPageSize: (size, limit) => {
        logger.log('warn', 'sync page size lowered', { stream: name, pageSize: size });
        open.lowered = { size, limit };
        open.loweredSince = new Date(clock.now()).toISOString();
      },
      startCursor: open.cursor,
      abortSignal: ctx.abortSignal,
      ...(chosen.pass === 'incremental' && stream.incremental
        ? { variables: incrementalVariables(stream.incremental, chosen.since) }
        : {}),
    }),
  );
  // Newest first: the listing stops at the last pass's mark, unless the order turns out not to be kept.
  const newest =
    chosen.pass === 'incremental' && stream.incremental?.kind === 'order'
      ? new NewestFirst(name, stream.incremental.field, chosen.since)
      : undefined;
  if (newest && open.orderBroken) newest.broken = true;
  for await (const p of pages) {
    const page = ++open.page;
    const reached = newest?.page(p.records) ?? false;
    if (newest?.broken && !open.orderBroken) {
      open.orderBroken = true;
      logger.log('warn', 'sync incremental order not kept', { stream: name, page });
    }
    await inSpan(
      'sync page',
      { runId: run.runId, stream: name, page, records: p.records.length },
      async (span) => {
        const changes = d.page(protect ? protect(p.records) : p.records);
        open.total = widen(open.total, p.total);
        setFields(span, { count: changes.length });
        if (changes.length) {
          const batch = { tenant, runId: run.runId, stream: name, page, changes, keyPaths: keyPaths(stream) };
          // A grouping sink may hold the page: it is checkpointed once the sink has stored it.
          const written = isGrouping(sink)
            ? await sink.write(batch, { abortSignal: ctx.abortSignal, hold: true })
            : await sink.write(batch, { abortSignal: ctx.abortSignal });
          setAside(d.counts, written);
          checkpoints.holding = written?.held === true;
          if (checkpoints.holding && !isGrouping(sink))
            throw new Error(`${sink.description} held page ${page} of ${name} but is no grouping sink`);
          if (written?.stored) await checkpoints.storedThrough(written.stored);
          open.changedPages.push(page);
        }
        const record: PageRecord = {
          kind: 'page' as const,
          page,
          cursor: p.endCursor,
          last: !p.hasNextPage || reached,
          changed: changes.length > 0,
          counts: { ...d.counts },
          ...(d.repeated ? { repeated: d.repeated } : {}),
          ...(open.total ? { total: open.total } : {}),
          ...(d.highWater ? { highWater: d.highWater } : {}),
          ...(p.pageSize < stream.pageSize
            ? { pageSize: p.pageSize, limit: open.lowered?.limit ?? 'the tenant’s limit' }
            : {}),
          ...(open.orderBroken ? { orderBroken: true } : {}),
        };
        open.pageSize = p.pageSize;
        checkpoints.push(record, d.takePageEntries());
        if (!checkpoints.holding) await checkpoints.settle();
      },
    );
    ctx.onPage?.(name, d.counts, d.expected);
    if (reached) break; // the records from here on are older than the mark: unchanged since the last pass
    if (p.hasNextPage && options.deadlineMs !== undefined && clock.now() >= options.deadlineMs) {
      await checkpoints.settle();
      return 'sliced';
    }
  }
  // A full listing checked against the total the tenant stated: fewer records read fails the stream, never green.
  if (chosen.pass === 'full' && open.total)
    await confirmTotal(graphql, stream, d.counts.read, open.total, {
      abortSignal: ctx.abortSignal,
      clearCheckpoint: async () => {
        await checkpoints.settle();
        await ctx.state.clearCheckpoint(tenant, name);
      },
    });
  return 'listed';
}
