import type { StreamCounts } from '../changes';
import { recordPath, type StreamDefinition } from '../streams';
import { isGrouping, type WriteOutcome } from '../sinks/types';
import { encodeRecord, type PageRecord } from './checkpoint';
import type { SyncContext } from './context';
import type { SyncStateStore } from './sync-state';

/** Adds what a sink set aside (SYNC_REJECTED_RECORDS=quarantine) to the stream's counts. */
export function setAside(counts: StreamCounts, outcome: WriteOutcome | void): void {
  if (outcome?.rejected) counts.rejected = (counts.rejected ?? 0) + outcome.rejected;
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
      const sink = this.ctx.sink;
      if (isGrouping(sink)) setAside(this.counts, await sink.flush(this.runId, this.stream));
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

/** The record keys the stream selects, for a sink whose files have columns (shared/streams/document.ts). */
export const fieldsOf = (stream: StreamDefinition) => {
  // graphql loads on this path only, as the stream's own parse does.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { recordKeys } = require('../streams/document') as typeof import('../streams/document');
  return { fields: recordKeys(stream.document, recordPath(stream)) };
};

export async function readLog(
  state: SyncStateStore,
  tenant: string,
  stream: string,
): Promise<AsyncIterable<Buffer>> {
  const log = await state.readCheckpoint(tenant, stream);
  if (!log) throw new Error(`the checkpoint log of ${stream} disappeared during its pass`);
  return log;
}
