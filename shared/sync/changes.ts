import { UpstreamError } from '../errors';
import { noCounts, type StreamCounts } from './counts';
import { getPath } from '../graphql/pager';
import { changeId, contentHash } from './fingerprint';
import { forEachEntry, Snapshot, SnapshotWriter } from './snapshot';

const TOMBSTONE = Buffer.from('deleted\0');

export type ChangeKind = 'created' | 'updated' | 'deleted';

/** One change, as every sink delivers it. `record` is absent for deletions. */
export interface Change {
  changeId: string;
  stream: string;
  kind: ChangeKind;
  id: string;
  record?: unknown;
}

/**
 * Compares one pass over a stream with its previous snapshot: new id → created, other hash → updated,
 * absent at the end of a complete pass → deleted. Only `finish()` — called after the last page — yields
 * deletions, so a pass that fails part-way can never delete anything.
 */
export class ChangeDetector {
  readonly counts: StreamCounts = noCounts();
  private readonly previous: Snapshot;
  private readonly next = new SnapshotWriter();

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
          'UPSTREAM_MALFORMED',
          this.stream,
          `a ${this.stream} record has no ${this.idPath}`,
        );
      const id = String(rawId);
      const idBytes = Buffer.from(id);
      if (idBytes.length > 0xffff)
        throw new UpstreamError(
          'UPSTREAM_MALFORMED',
          this.stream,
          `a ${this.stream} id is longer than 64 KiB`,
        );
      const hash = contentHash(record);
      this.counts.read++;
      const i = this.previous.find(idBytes);
      if (i >= 0 && !this.previous.mark(i)) continue; // the same id twice in one pass: counted once
      this.next.add(idBytes, hash);
      if (i < 0) {
        this.counts.created++;
        out.push({
          changeId: changeId(this.stream, id, hash),
          stream: this.stream,
          kind: 'created',
          id,
          record,
        });
      } else if (!this.previous.hashAt(i).equals(hash)) {
        this.counts.updated++;
        out.push({
          changeId: changeId(this.stream, id, hash),
          stream: this.stream,
          kind: 'updated',
          id,
          record,
        });
      } else this.counts.unchanged++;
    }
    return out;
  }

  /** The entries the last pages added to the next snapshot (what a page's checkpoint keeps). */
  takePageEntries(): Buffer {
    return this.next.takeRecent();
  }

  /** Carries on from a checkpoint: the entries already seen in this pass, and the counts so far. */
  restore(entries: Buffer, counts: StreamCounts): void {
    forEachEntry(entries, (id, hash) => {
      const i = this.previous.find(id);
      if (i >= 0) this.previous.mark(i);
      this.next.add(id, hash);
    });
    this.next.takeRecent();
    Object.assign(this.counts, counts);
  }

  /** After the last page: the deletions, and the snapshot to store for the next run. */
  finish(): { deletions: Change[]; snapshot: Buffer[] } {
    const deletions: Change[] = [];
    for (const i of this.previous.unmarked()) {
      const id = this.previous.idAt(i);
      // A deletion's "content" is a tombstone of the last content seen: stable across retries, and never
      // the id of the change that created or updated the record.
      deletions.push({
        changeId: changeId(this.stream, id, Buffer.concat([TOMBSTONE, this.previous.hashAt(i)])),
        stream: this.stream,
        kind: 'deleted',
        id,
      });
    }
    this.counts.deleted = deletions.length;
    return { deletions, snapshot: this.next.chunkList() };
  }
}
