import { systemClock } from '../clock';
import { IntegrationError } from '../errors';
import type { TenantGraphqlClient } from '../graphql/client';
import { paginate, type Page } from '../graphql/pager';
import { prefetch } from '../graphql/prefetch';
import { silentLogger } from '../log';
import { recordPath, type StreamDefinition } from '../streams';
import { inSpan, setFields } from '../telemetry';
import type { StreamCounts } from '../changes';
import type { WriteOutcome } from '../sinks';
import { ChangeDetector } from './changes';
import { decodeCheckpoint, encodeRecord, logEntries, type PageRecord } from './checkpoint';
import { catalogDigest, DEFAULT_PASS_POLICY, passFor, unseenFor, widen, type PassKind } from './passes';
import {
  SnapshotIndex,
  snapshotHeader,
  SnapshotTruncated,
  StoredSnapshot,
  type SnapshotMeta,
} from './snapshot';
import type { SyncRunRecord, SyncStateStore } from './state';
import type { StreamResult, SyncContext } from './context';

/*
 * One stream's pass, in its phases (shared/sync/run.ts's `syncStream` calls them in turn):
 *
 * 1. `openPass` — the checkpoint and the stored snapshot read, the pass chosen (full or incremental), resumed from
 *    its checkpoint or begun; or the stream answered at once (done already, or only its seal left).
 * 2. `listPages` — page by page (the next one fetched while this one is written), each page's changes to the sink,
 *    then checkpointed (`PageCheckpoints`); a slice stops after its page once its deadline has passed.
 * 3. `endPass` — deletions (only what the pass may conclude: shared/sync/passes.ts), the seal, the sink's end of the
 *    stream, the next snapshot, the done mark.
 */

/** The record keys the stream selects, for a sink whose files have columns (shared/streams/document.ts). */
const fieldsOf = (stream: StreamDefinition) => {
  // graphql loads on this path only, as the stream's own parse does.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { recordKeys } = require('../streams/document') as typeof import('../streams/document');
  return { fields: recordKeys(stream.document, recordPath(stream)) };
};

/** Adds what a sink set aside (SYNC_REJECTED_RECORDS=quarantine) to the stream's counts. */
export function setAside(counts: StreamCounts, outcome: WriteOutcome | void): void {
  if (outcome?.rejected) counts.rejected = (counts.rejected ?? 0) + outcome.rejected;
}

async function readLog(
  state: SyncStateStore,
  tenant: string,
  stream: string,
): Promise<AsyncIterable<Buffer>> {
  const log = await state.readCheckpoint(tenant, stream);
  if (!log) throw new Error(`the checkpoint log of ${stream} disappeared during its pass`);
  return log;
}

/** The later of two ISO date-times (either may be missing). */
const latest = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : Date.parse(a) >= Date.parse(b) ? a : b;

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
      uniqueKeys: chosen.pass === 'full' && (stream.pagination === 'cursor' || stream.pagination === 'none'),
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
 * The pages' checkpoint records on their way to the log. A page the sink holds (postgres stores pages in groups) is
 * checkpointed only once the sink has stored it: until then its record waits here, so a pass that dies before the
 * sink stores it reads it again.
 */
export class PageCheckpoints {
  private readonly waiting: Array<{ record: PageRecord; entries: Buffer }> = [];
  /** Whether the sink holds pages not stored yet. */
  holding = false;

  constructor(
    private readonly ctx: Pick<SyncContext, 'state' | 'tenant' | 'sink'>,
    private readonly runId: string,
    private readonly stream: string,
    private readonly counts: StreamCounts,
  ) {}

  push(record: PageRecord, entries: Buffer): void {
    this.waiting.push({ record, entries });
  }

  /** Every waiting record into the log, after the sink stored what it held (what it set aside then counts too). */
  async settle(): Promise<void> {
    if (this.holding) {
      setAside(this.counts, await this.ctx.sink.flush?.(this.runId, this.stream));
      this.holding = false;
      // What the sink set aside while storing counts from the last page it stored on.
      const last = this.waiting.at(-1);
      if (last) last.record.counts = { ...this.counts };
    }
    await this.append(this.waiting.length);
  }

  /** The sink stored the pages it held through `throughPage` (while it holds later ones): their records go in. */
  async storedThrough({ throughPage, rejected }: { throughPage: number; rejected: number }): Promise<void> {
    const count = this.waiting.filter((w) => w.record.page <= throughPage).length;
    if (rejected) {
      this.counts.rejected = (this.counts.rejected ?? 0) + rejected;
      const last = this.waiting[count - 1];
      if (last)
        last.record.counts = {
          ...last.record.counts,
          rejected: (last.record.counts.rejected ?? 0) + rejected,
        };
    }
    await this.append(count);
  }

  private async append(count: number): Promise<void> {
    if (count)
      await this.ctx.state.appendCheckpoint(
        this.ctx.tenant,
        this.stream,
        Buffer.concat(this.waiting.splice(0, count).map((w) => encodeRecord(w.record, w.entries))),
      );
  }
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
  const pages: AsyncIterable<Page> = prefetch(
    paginate(graphql, stream, {
      pageSize: open.pageSize,
      onPageSize: (size, limit) => {
        logger.log('warn', 'sync page size lowered', { stream: name, pageSize: size });
        open.lowered = { size, limit };
        open.loweredSince = new Date(clock.now()).toISOString();
      },
      startCursor: open.cursor,
      abortSignal: ctx.abortSignal,
      ...(chosen.pass === 'incremental' && stream.incremental
        ? { variables: { [stream.incremental.variable]: chosen.since } }
        : {}),
    }),
  );
  for await (const p of pages) {
    const page = ++open.page;
    await inSpan(
      'sync page',
      { runId: run.runId, stream: name, page, records: p.records.length },
      async (span) => {
        const changes = d.page(p.records);
        open.total = widen(open.total, p.total);
        setFields(span, { count: changes.length });
        if (changes.length) {
          const written = await sink.write(
            { tenant, runId: run.runId, stream: name, page, changes },
            { abortSignal: ctx.abortSignal, hold: true },
          );
          setAside(d.counts, written);
          checkpoints.holding = written?.held === true;
          // Held pages are checkpointed once flushed: a sink that holds but cannot flush would lose them.
          if (checkpoints.holding && !sink.flush)
            throw new Error(`${sink.description} held page ${page} of ${name} but cannot flush it`);
          if (written?.stored) await checkpoints.storedThrough(written.stored);
          open.changedPages.push(page);
        }
        const record: PageRecord = {
          kind: 'page' as const,
          page,
          cursor: p.endCursor,
          last: !p.hasNextPage,
          changed: changes.length > 0,
          counts: { ...d.counts },
          ...(d.repeated ? { repeated: d.repeated } : {}),
          ...(open.total ? { total: open.total } : {}),
          ...(d.highWater ? { highWater: d.highWater } : {}),
          ...(p.pageSize < stream.pageSize
            ? { pageSize: p.pageSize, limit: open.lowered?.limit ?? 'the tenant’s limit' }
            : {}),
        };
        open.pageSize = p.pageSize;
        checkpoints.push(record, d.takePageEntries());
        if (!checkpoints.holding) await checkpoints.settle();
      },
    );
    ctx.onPage?.(name, d.counts, d.expected);
    if (p.hasNextPage && options.deadlineMs !== undefined && clock.now() >= options.deadlineMs) {
      await checkpoints.settle();
      return 'sliced';
    }
  }
  return 'listed';
}

/**
 * Ends a listed pass: what the sink still holds stored, the deletions the pass may conclude written as the page after
 * the last, the seal, the sink's end of the stream, the next snapshot (streamed, never held whole), the done mark.
 */
export async function endPass(
  stream: StreamDefinition,
  run: SyncRunRecord,
  ctx: SyncContext,
  open: OpenPass,
): Promise<StreamResult> {
  const { tenant, state, sink } = ctx;
  const clock = ctx.clock ?? systemClock;
  const logger = ctx.logger ?? silentLogger;
  const name = stream.name;
  const { detector: d, chosen, previous, changedPages } = open;
  await open.checkpoints.settle(); // the listing's last pages, when the sink still holds them
  // A key met twice in a listing that gives each record once fails the stream here, before anything is sealed.
  if (d.suspects.size) await d.verifyKeys(logEntries(await readLog(state, tenant, name)));
  const unseen = unseenFor(stream, chosen.pass, {
    repeated: d.repeated,
    total: open.total,
    read: d.counts.read,
  });
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
        { tenant, runId: run.runId, stream: name, page: open.page + 1, changes: deletions },
        { abortSignal: ctx.abortSignal },
      ),
    );
    changedPages.push(open.page + 1);
  }
  await state.appendCheckpoint(
    tenant,
    name,
    encodeRecord({ kind: 'sealing', counts: d.counts, changedPages }),
  );
  setAside(d.counts, await sink.endStream(tenant, run.runId, name, changedPages, d.counts, fieldsOf(stream)));
  // The next snapshot: a header, every page's entries read back from the log, then the previous entries the
  // pass keeps — streamed, never held whole.
  const meta: SnapshotMeta = {
    catalog: catalogDigest(stream),
    ...(stream.incremental
      ? {
          highWater: latest(d.highWater, chosen.pass === 'incremental' ? previous.meta.highWater : undefined),
          fullPassAt:
            chosen.pass === 'full'
              ? new Date(Date.parse(run.startedAt) || clock.now()).toISOString()
              : previous.meta.fullPassAt,
        }
      : {}),
    ...(open.lowered
      ? { pageSize: { ...open.lowered, since: open.loweredSince ?? new Date(clock.now()).toISOString() } }
      : {}),
  };
  const log = await readLog(state, tenant, name);
  await state.writeSnapshot(
    tenant,
    name,
    (async function* () {
      yield snapshotHeader(meta);
      yield* logEntries(log);
      yield* d.kept();
    })(),
  );
  await state.appendCheckpoint(tenant, name, encodeRecord({ kind: 'done', counts: d.counts }));
  return {
    stream: name,
    ok: true,
    done: true,
    counts: { ...d.counts },
    pass: chosen.pass,
    ...loweredOf(open),
  };
}
