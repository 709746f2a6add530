import { systemClock } from '../clock';
import { silentLogger } from '../log';
import { keyPaths, type StreamDefinition } from '../streams';
import { encodeRecord, logEntries } from './checkpoint';
import { catalogDigest, unseenFor } from './passes';
import { snapshotHeader, type SnapshotMeta } from './snapshot';
import type { SyncRunRecord } from './run-record';
import type { StreamResult, SyncContext } from './context';
import { fieldsOf, readLog, setAside } from './page-checkpoints';
import { loweredOf, type OpenPass } from './stream-pass';

/** The later of two ISO date-times (either may be missing). */
const latest = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : Date.parse(a) >= Date.parse(b) ? a : b;

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
        {
          tenant,
          runId: run.runId,
          stream: name,
          page: open.page + 1,
          changes: deletions,
          keyPaths: keyPaths(stream),
        },
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
          // The server did not keep the newest-first order: the next pass reads everything.
          ...(open.orderBroken ? { fullNext: true } : {}),
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
    ...(open.orderBroken && chosen.pass === 'incremental' ? { orderNotKept: true as const } : {}),
  };
}
