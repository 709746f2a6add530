import { generate, indexOfId, KINDS, recordId, type Kind, type RecordData } from './generate';

/** Deterministic PRNG for choosing which records a `data/mutate` call changes. */
function chooser(seed: string, n: number): () => number {
  let a = 0x9e3779b9 ^ n;
  for (let i = 0; i < seed.length; i++) a = Math.imul(a ^ seed.charCodeAt(i), 0x01000193);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seeded records last changed in the year before this, older ones first: a record's time is a sum, not a draw. */
const SEEDED_UNTIL = Date.UTC(2026, 0, 1);
const SEEDED_SPAN = 365 * 86_400_000;

/**
 * One kind's records: generated on demand, plus a small overlay of what was created, changed or deleted.
 * Order is stable: by index, created records after the seeded ones. Every record's `updatedAt` is true to its
 * changes: a seeded one's is fixed (rising with its index), a created or changed one's is when that happened by
 * the sandbox's clock — so "changed since" can be answered without generating the records that did not change.
 */
export class Collection {
  private size: number;
  private readonly deleted = new Set<number>();
  private readonly versions = new Map<number, number>();
  private readonly overrides = new Map<number, Record<string, unknown>>();
  private readonly changedAt = new Map<number, number>();

  constructor(
    readonly kind: Kind,
    private readonly seed: string,
    private readonly seeded: number,
    private readonly now: () => number = Date.now,
  ) {
    this.size = seeded;
  }

  /** When a seeded record last changed before the sandbox started. */
  private seededAt(index: number): number {
    return SEEDED_UNTIL - SEEDED_SPAN + Math.floor((index * SEEDED_SPAN) / Math.max(this.seeded, 1));
  }

  private updatedAt(index: number): number {
    return this.changedAt.get(index) ?? this.seededAt(index);
  }

  get count(): number {
    return this.size - this.deleted.size;
  }

  private live(index: number): boolean {
    return index >= 0 && index < this.size && !this.deleted.has(index);
  }

  record(index: number): RecordData {
    const base = generate(this.seed, this.kind, index, this.versions.get(index) ?? 0);
    base.updatedAt = new Date(this.updatedAt(index)).toISOString();
    const o = this.overrides.get(index);
    return o ? { ...base, ...o } : base;
  }

  get(id: string): RecordData | undefined {
    const index = indexOfId(this.kind, id);
    return index !== undefined && this.live(index) ? this.record(index) : undefined;
  }

  /** Up to `first` live records after index `after` (-1 for the start); with `since`, only those changed since. */
  page(
    first: number,
    after: number,
    since?: number,
  ): { items: Array<{ index: number; node: RecordData }>; hasNextPage: boolean; total: number } {
    if (since !== undefined) return this.changedSince(first, after, since);
    const items: Array<{ index: number; node: RecordData }> = [];
    let i = after + 1;
    for (; i < this.size && items.length < first; i++)
      if (!this.deleted.has(i)) items.push({ index: i, node: this.record(i) });
    while (i < this.size && this.deleted.has(i)) i++;
    return { items, hasNextPage: i < this.size, total: this.count };
  }

  /** Live records changed at or after `since`, in index order: seeded ones from where their times reach it, and the overlay's. */
  private changedSince(first: number, after: number, since: number) {
    const span = Math.max(this.seeded, 1);
    // The first seeded index whose fixed time is at or after `since` (times rise with the index).
    let from = Math.ceil(((since - (SEEDED_UNTIL - SEEDED_SPAN)) / SEEDED_SPAN) * span);
    from = Math.min(Math.max(from, 0), this.seeded);
    while (from > 0 && this.seededAt(from - 1) >= since) from--;
    while (from < this.seeded && this.seededAt(from) < since) from++;
    const overlay = [...this.changedAt.keys()].sort((a, b) => a - b);
    const matches = (i: number) => this.live(i) && this.updatedAt(i) >= since;
    const before = overlay.filter((i) => i < from && matches(i));
    const tail = overlay.filter((i) => i >= this.seeded && matches(i));
    // The seeded run [from, seeded) is walked, never listed: it may be most of the collection.
    const inRun = (i: number) => i >= from && i < this.seeded;
    const total =
      before.length +
      tail.length +
      (this.seeded - from) -
      [...this.deleted].filter(inRun).length -
      overlay.filter((i) => inRun(i) && this.live(i) && !matches(i)).length;
    const items: Array<{ index: number; node: RecordData }> = [];
    let more = false;
    const take = (i: number) => {
      if (i <= after || !matches(i)) return true;
      if (items.length === first) return !(more = true);
      items.push({ index: i, node: this.record(i) });
      return true;
    };
    for (const i of before) if (!take(i)) break;
    if (!more) for (let i = Math.max(from, after + 1); i < this.seeded; i++) if (!take(i)) break;
    if (!more) for (const i of tail) if (!take(i)) break;
    return { items, hasNextPage: more, total };
  }

  update(id: string, fields: Record<string, unknown>): RecordData | undefined {
    const index = indexOfId(this.kind, id);
    if (index === undefined || !this.live(index)) return undefined;
    if (Object.keys(fields).length) {
      this.overrides.set(index, { ...this.overrides.get(index), ...fields });
      this.changedAt.set(index, this.now());
    }
    return this.record(index);
  }

  /** Changes `creates`, `updates`, `deletes` records, chosen deterministically, and names them. */
  mutate(creates: number, updates: number, deletes: number, round: number) {
    const next = chooser(`${this.seed}|${this.kind}`, round);
    const pickLive = (exclude: Set<number>): number | undefined => {
      for (let tries = 0; tries < 10_000; tries++) {
        const i = Math.floor(next() * this.size);
        if (this.live(i) && !exclude.has(i)) return i;
      }
      for (let i = 0; i < this.size; i++) if (this.live(i) && !exclude.has(i)) return i;
      return undefined;
    };
    const touched = new Set<number>();
    const updated: string[] = [];
    const deleted: string[] = [];
    for (let n = 0; n < updates; n++) {
      const i = pickLive(touched);
      if (i === undefined) break;
      touched.add(i);
      const before = JSON.stringify(this.record(i));
      // A new version is a new draw; draw again in the unlikely case it equals the old content.
      do this.versions.set(i, (this.versions.get(i) ?? 0) + 1);
      while (JSON.stringify(generate(this.seed, this.kind, i, this.versions.get(i) as number)) === before);
      this.overrides.delete(i);
      this.changedAt.set(i, this.now());
      updated.push(recordId(this.kind, i));
    }
    for (let n = 0; n < deletes; n++) {
      const i = pickLive(touched);
      if (i === undefined) break;
      touched.add(i);
      this.deleted.add(i);
      deleted.push(recordId(this.kind, i));
    }
    const created: string[] = [];
    for (let n = 0; n < creates; n++) {
      this.changedAt.set(this.size, this.now());
      created.push(recordId(this.kind, this.size++));
    }
    return { created, updated, deleted };
  }
}

export class DataStore {
  readonly collections: Record<Kind, Collection>;
  private round = 0;

  constructor(seed: string, recordsPerKind: number, now: () => number = Date.now) {
    this.collections = Object.fromEntries(
      KINDS.map((k) => [k, new Collection(k, seed, recordsPerKind, now)]),
    ) as Record<Kind, Collection>;
  }

  mutate(kind: Kind, creates: number, updates: number, deletes: number) {
    return this.collections[kind].mutate(creates, updates, deletes, ++this.round);
  }
}
