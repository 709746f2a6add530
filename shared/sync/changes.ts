import { UpstreamError } from '../errors';
import { noCounts, type StreamCounts } from './counts';
import { getPath } from '../graphql/pager';
import { changeIdOf, deletionIdOf, fingerprint, recordJson } from './fingerprint';
import { EntryWriter, forEachEntry, Snapshot } from './snapshot';

export type ChangeKind = 'created' | 'updated' | 'deleted';

const RECORD_JSON = Symbol('recordJson');

/** One change, as every sink delivers it. `record` is absent for deletions. */
export interface Change {
  changeId: string;
  stream: string;
  kind: ChangeKind;
  id: string;
  record?: unknown;
  /** The record's JSON, already made for its fingerprint: sinks reuse it (`changeJson`). Not enumerable. */
  readonly [RECORD_JSON]?: string;
}

function change(
  stream: string,
  kind: ChangeKind,
  id: string,
  changeId: string,
  record?: unknown,
  json?: string,
) {
  const c: Change =
    record === undefined ? { changeId, stream, kind, id } : { changeId, stream, kind, id, record };
  if (json !== undefined) Object.defineProperty(c, RECORD_JSON, { value: json });
  return c;
}

/** The record's JSON as the change carries it (made once for its fingerprint), or made now. */
export const recordJsonOf = (c: Change): string => c[RECORD_JSON] ?? JSON.stringify(c.record ?? null);

/** A change as one line of JSON, the same as `JSON.stringify(change)`, without serialising the record twice. */
export function changeJson(c: Change): string {
  const json = c[RECORD_JSON];
  if (json === undefined) return JSON.stringify(c);
  return `{"changeId":"${c.changeId}","stream":${JSON.stringify(c.stream)},"kind":"${c.kind}","id":${JSON.stringify(c.id)},"record":${json}}`;
}

/**
 * Compares one pass over a stream with its previous snapshot: new id → created, other hash → updated,
 * absent at the end of a complete pass → deleted. Only `finish()` — called after the last page — yields
 * deletions, so a pass that fails part-way can never delete anything.
 */
export class ChangeDetector {
  readonly counts: StreamCounts = noCounts();
  private previous: Snapshot;
  private readonly pageEntries = new EntryWriter();

  constructor(
    readonly stream: string,
    previous: Buffer | undefined,
    private readonly idPath: string,
  ) {
    this.previous = new Snapshot(previous);
  }

  /** How many records the last complete pass saw: what a progress bar can aim at. */
  get expected(): number {
    return this.previous.count;
  }

  /** The changes in one page of records (unchanged ones produce nothing). */
  page(records: unknown[]): Change[] {
    const out: Change[] = [];
    for (const record of records) {
      const rawId = getPath(record, this.idPath);
      if ((typeof rawId !== 'string' && typeof rawId !== 'number') || rawId === '')
        throw new UpstreamError(
          'upstream_malformed',
          this.stream,
          `a ${this.stream} record has no ${this.idPath}`,
        );
      const id = String(rawId);
      const idBytes = Buffer.from(id);
      if (idBytes.length > 0xffff)
        throw new UpstreamError(
          'upstream_malformed',
          this.stream,
          `a ${this.stream} id is longer than 64 KiB`,
        );
      const json = recordJson(record);
      const hash = fingerprint(this.stream, id, json);
      this.counts.read++;
      const i = this.previous.find(idBytes);
      if (i >= 0 && !this.previous.mark(i)) continue; // the same id twice in one pass: counted once
      this.pageEntries.add(idBytes, hash);
      if (i < 0) {
        this.counts.created++;
        out.push(change(this.stream, 'created', id, changeIdOf(hash), record, json));
      } else if (!this.previous.hashAt(i).equals(hash)) {
        this.counts.updated++;
        out.push(change(this.stream, 'updated', id, changeIdOf(hash), record, json));
      } else this.counts.unchanged++;
    }
    return out;
  }

  /** The entries the last page adds to the next snapshot: what its checkpoint record keeps. */
  takePageEntries(): Buffer {
    return this.pageEntries.take();
  }

  /**
   * Carries on from a checkpoint: the counts so far, and the entries already seen in this pass (streamed from
   * the checkpoint log), so records seen before the resume are not reported as deleted.
   */
  async resume(counts: StreamCounts, seen: AsyncIterable<Buffer>): Promise<void> {
    for await (const entries of seen)
      forEachEntry(entries, (id) => {
        const i = this.previous.find(id);
        if (i >= 0) this.previous.mark(i);
      });
    Object.assign(this.counts, counts);
  }

  /** After the last page: the deletions. (The next snapshot is the pass's checkpoint log: see `logEntries`.) */
  finish(): Change[] {
    const deletions: Change[] = [];
    for (const i of this.previous.unmarked()) {
      const id = this.previous.idAt(i);
      deletions.push(change(this.stream, 'deleted', id, deletionIdOf(this.previous.hashAt(i))));
    }
    this.counts.deleted = deletions.length;
    // Not needed any more: free for the collector before the pass reads its log back to store the next one.
    this.previous = new Snapshot();
    return deletions;
  }
}
