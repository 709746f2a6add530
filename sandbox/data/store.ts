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

/**
 * One kind's records: generated on demand, plus a small overlay of what was created, changed or deleted.
 * Order is stable: by index, created records after the seeded ones.
 */
export class Collection {
  private size: number;
  private readonly deleted = new Set<number>();
  private readonly versions = new Map<number, number>();
  private readonly overrides = new Map<number, Record<string, unknown>>();

  constructor(
    readonly kind: Kind,
    private readonly seed: string,
    private readonly seeded: number,
  ) {
    this.size = seeded;
  }

  get count(): number {
    return this.size - this.deleted.size;
  }

  private live(index: number): boolean {
    return index >= 0 && index < this.size && !this.deleted.has(index);
  }

  record(index: number): RecordData {
    const base = generate(this.seed, this.kind, index, this.versions.get(index) ?? 0);
    const o = this.overrides.get(index);
    return o ? { ...base, ...o } : base;
  }

  get(id: string): RecordData | undefined {
    const index = indexOfId(this.kind, id);
    return index !== undefined && this.live(index) ? this.record(index) : undefined;
  }

  /** Up to `first` live records after index `after` (-1 for the start). */
  page(
    first: number,
    after: number,
  ): { items: Array<{ index: number; node: RecordData }>; hasNextPage: boolean } {
    const items: Array<{ index: number; node: RecordData }> = [];
    let i = after + 1;
    for (; i < this.size && items.length < first; i++)
      if (!this.deleted.has(i)) items.push({ index: i, node: this.record(i) });
    while (i < this.size && this.deleted.has(i)) i++;
    return { items, hasNextPage: i < this.size };
  }

  update(id: string, fields: Record<string, unknown>): RecordData | undefined {
    const index = indexOfId(this.kind, id);
    if (index === undefined || !this.live(index)) return undefined;
    this.overrides.set(index, { ...this.overrides.get(index), ...fields });
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
    for (let n = 0; n < creates; n++) created.push(recordId(this.kind, this.size++));
    return { created, updated, deleted };
  }
}

export class DataStore {
  readonly collections: Record<Kind, Collection>;
  private round = 0;

  constructor(seed: string, recordsPerKind: number) {
    this.collections = Object.fromEntries(
      KINDS.map((k) => [k, new Collection(k, seed, recordsPerKind)]),
    ) as Record<Kind, Collection>;
  }

  mutate(kind: Kind, creates: number, updates: number, deletes: number) {
    return this.collections[kind].mutate(creates, updates, deletes, ++this.round);
  }
}
