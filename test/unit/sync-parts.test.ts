import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../shared/errors';
import { resolveStreams, SANDBOX_STREAMS } from '../../sandbox/streams';
import { ChangeDetector } from '../../shared/sync/change-detector';
import { changeJson } from '../../shared/changes';
import { changeIdFor, deletionIdOf, recordJson } from '../../shared/sync/fingerprint';
import { createHash } from 'node:crypto';
import {
  EntryWriter,
  forEachEntry,
  snapshotHeader,
  SnapshotIndex,
  StoredSnapshot,
} from '../../shared/sync/snapshot';

describe('change ids', () => {
  const fp = (stream: string, record: { id: string } & Record<string, unknown>) =>
    changeIdFor(stream, record.id, recordJson(record));
  /** The 128 bits as a snapshot stores them (what a deletion's id is made from). */
  const bytes = (changeId: string) => Buffer.from(changeId, 'hex');

  it('the same content gives the same change id; any change in content, id or stream changes it', () => {
    const a = { id: '1', owner: { name: 'A', email: null }, tags: ['x', 'y'] };
    expect(fp('controls', a)).toBe(fp('controls', JSON.parse(JSON.stringify(a)) as typeof a));
    expect(bytes(fp('controls', a))).toHaveLength(16);
    expect(fp('controls', { ...a, tags: ['y', 'x'] })).not.toBe(fp('controls', a));
    expect(fp('controls', { ...a, owner: { name: 'B', email: null } })).not.toBe(fp('controls', a));
    expect(fp('controls', { ...a, id: '2' })).not.toBe(fp('controls', a));
    expect(fp('users', a)).not.toBe(fp('controls', a));
    // The id's length is hashed too: an id cannot borrow the start of the content.
    expect(changeIdFor('controls', 'a', '\0b')).not.toBe(changeIdFor('controls', 'a\0', 'b'));
  });

  it("a change id is 128 bits of hex; a deletion's differs from every created or updated one", () => {
    const h = fp('controls', { id: '1' });
    expect(h).toMatch(/^[0-9a-f]{32}$/);
    expect(h).toBe(fp('controls', { id: '1' }));
    expect(deletionIdOf(bytes(h))).toMatch(/^[0-9a-f]{32}$/);
    expect(deletionIdOf(bytes(h))).not.toBe(h);
    expect(deletionIdOf(bytes(h))).toBe(deletionIdOf(bytes(fp('controls', { id: '1' }))));
  });

  it('change ids are the same from release to release: downstream de-duplicates on them', () => {
    // Computed by the release before change ids were hashed straight to hex (shared/sync/fingerprint.ts).
    const json = recordJson({ id: '1' });
    expect(changeIdFor('controls', '1', json)).toBe('76b5e7ccababf7b181ca25d3340026da');
    expect(deletionIdOf(bytes(changeIdFor('controls', '1', json)))).toBe('db9843b87afd77314500901a78117c36');
  });

  it("a change's JSON line is exactly JSON.stringify of the change, with or without its record", async () => {
    const d = new ChangeDetector('controls', undefined, { idPath: 'id' });
    const [created] = d.page([{ id: 'é"\n', nested: { list: [1, null, 'x'] } }]);
    expect(changeJson(created)).toBe(JSON.stringify(created));
    expect(JSON.parse(changeJson(created))).toEqual(created);
    const gone = new ChangeDetector('controls', d.takePageEntries(), { idPath: 'id' });
    const [deleted] = await gone.finish('delete');
    expect(changeJson(deleted)).toBe(JSON.stringify(deleted));
  });
});

describe('compact snapshot', () => {
  const all = async <T>(items: AsyncIterable<T>) => {
    const out: T[] = [];
    for await (const item of items) out.push(item);
    return out;
  };
  const once = (bytes: Buffer) =>
    (async function* () {
      yield bytes;
    })();
  const entriesOf = (ids: string[]) => {
    const w = new EntryWriter();
    for (const id of ids) w.add(Buffer.from(id), changeIdFor('controls', id, recordJson({ id })));
    return w.take();
  };
  const idsIn = (b: Buffer) => {
    const out: string[] = [];
    forEachEntry(b, (id) => out.push(id.toString()));
    return out;
  };

  it('indexes 20 000 entries and finds each id, and only those; a changed hash is told apart', () => {
    const w = new EntryWriter();
    for (let i = 0; i < 20_000; i++)
      w.add(Buffer.from(`ctl-${i}`), changeIdFor('controls', `ctl-${i}`, String(i)));
    const s = SnapshotIndex.of(w.take());
    expect(s.count).toBe(20_000);
    for (const i of [0, 1, 9_999, 19_999]) {
      const at = s.find(Buffer.from(`ctl-${i}`));
      expect(at).toBe(i); // entries are numbered in stored order
      expect(s.hasChangeId(at, changeIdFor('controls', `ctl-${i}`, String(i)))).toBe(true);
      expect(s.hasChangeId(at, changeIdFor('controls', `ctl-${i}`, String(i + 1)))).toBe(false);
    }
    expect(s.find(Buffer.from('ctl-20000'))).toBe(-1);
    expect(s.find(Buffer.from('ctl-'))).toBe(-1);
    expect(s.find(Buffer.from(''))).toBe(-1);
  });

  it('the entries not seen come from the snapshot read again, in stored order; a truncated one is an error', async () => {
    const bytes = entriesOf(['a', 'b', 'c']);
    const s = SnapshotIndex.of(bytes);
    expect(s.mark(s.find(Buffer.from('b')))).toBe(true);
    expect(s.mark(s.find(Buffer.from('b')))).toBe(false);
    const unseen = await all(s.unseenEntries(once(bytes)));
    expect(unseen.map((e) => e.id)).toEqual(['a', 'c']);
    expect(unseen[1].hash.toString('hex')).toBe(changeIdFor('controls', 'c', recordJson({ id: 'c' })));
    expect(unseen[1].missing).toBe(false);
    expect(() => SnapshotIndex.of(bytes.subarray(0, 10))).toThrow('truncated');
    // Read again, the snapshot must be the one indexed.
    await expect(all(s.unseenEntries(once(entriesOf(['a', 'b']))))).rejects.toThrow('3 entries');
    await expect(all(s.unseenRuns(once(entriesOf(['a', 'b', 'c', 'd']))))).rejects.toThrow('3 entries');
  });

  it('what a pass keeps and what it reports are in stored order; an id stored twice counts once', async () => {
    const bytes = entriesOf(['a', 'x', 'b', 'x', 'c', 'd']);
    const s = SnapshotIndex.of(bytes);
    expect(s.count).toBe(6);
    expect(s.unseen).toBe(5);
    expect((await all(s.unseenEntries(once(bytes)))).map((e) => e.id)).toEqual(['a', 'x', 'b', 'c', 'd']);
    s.mark(s.find(Buffer.from('b')));
    s.mark(s.find(Buffer.from('d')));
    s.mark(s.find(Buffer.from('d')));
    expect(s.unseen).toBe(3);
    // runs of adjacent entries: [a, x], then [c] — b seen, the second x dropped, d seen
    expect((await all(s.unseenRuns(once(bytes)))).map(idsIn)).toEqual([['a', 'x'], ['c']]);
    // read again in other chunks (whole entries each), the same runs cut where the chunks are
    const cut = entriesOf(['a']).length;
    const twoChunks = (async function* () {
      yield bytes.subarray(0, cut);
      yield bytes.subarray(cut);
    })();
    expect((await all(s.unseenRuns(twoChunks))).map(idsIn)).toEqual([['a'], ['x'], ['c']]);
    expect((await all(s.unseenEntries(once(bytes)))).map((e) => e.id)).toEqual(['a', 'x', 'c']);
  });

  it('a stored snapshot streams: any chunking gives the same header, entries and digest', async () => {
    const w = new EntryWriter();
    for (let i = 0; i < 300; i++)
      w.add(Buffer.from(`id-${'é'.repeat(i % 7)}${i}`), changeIdFor('s', `${i}`, '{}'));
    const entries = w.take();
    const meta = { catalog: 'c1', highWater: '2026-11-25T00:00:00.000Z' };
    const file = Buffer.concat([snapshotHeader(meta), entries]);
    const digest = createHash('sha256').update(file).digest('hex').slice(0, 32);
    for (const size of [1, 2, 3, 7, 19, 64, 1000, file.length]) {
      const stored = new StoredSnapshot(
        (async function* () {
          for (let at = 0; at < file.length; at += size) yield file.subarray(at, at + size);
        })(),
      );
      const chunks = await all(stored.entries());
      // every chunk holds whole entries, and together they are the stored ones
      expect(Buffer.concat(chunks).equals(entries)).toBe(true);
      for (const c of chunks) expect(() => SnapshotIndex.of(c)).not.toThrow();
      expect(stored.meta).toEqual(meta);
      expect(stored.digest).toBe(digest);
    }
    // A snapshot written before headers is all entries; none at all has no digest.
    const legacy = new StoredSnapshot(once(entries));
    expect(Buffer.concat(await all(legacy.entries())).equals(entries)).toBe(true);
    expect(legacy.meta).toEqual({});
    expect(new StoredSnapshot(undefined).digest).toBe('none');
    // Cut inside its last entry: an error, never a shorter snapshot.
    const cut = new StoredSnapshot(once(file.subarray(0, file.length - 3)));
    await expect(all(cut.entries())).rejects.toThrow('truncated');
  });

  it('an id the server listed twice in one pass is one record: found, and never reported as deleted', async () => {
    const first = new ChangeDetector('controls', undefined, { idPath: 'id' });
    first.page([{ id: 'a' }, { id: 'x', v: 1 }]);
    first.page([{ id: 'x', v: 1 }]); // the listing shifted and served x again
    const snapshot = first.takePageEntries();
    // Every stored id seen again: the pass's end has nothing to read again (neither deletions nor entries kept).
    const index = SnapshotIndex.of(snapshot);
    const again = jest.fn(() => once(snapshot));
    const next = new ChangeDetector('controls', { index, again }, { idPath: 'id' });
    expect(next.expected).toBe(3);
    expect(next.page([{ id: 'x', v: 1 }, { id: 'a' }]).map((c) => c.id)).toEqual([]);
    expect(await next.finish('keep')).toEqual([]);
    expect(await all(next.kept())).toEqual([]);
    expect(again).not.toHaveBeenCalled();
    expect(next.counts).toMatchObject({ unchanged: 2, deleted: 0 });
    // One id not seen: it is read again, and reported.
    const later = new ChangeDetector('controls', snapshot, { idPath: 'id' });
    later.page([{ id: 'x', v: 1 }]);
    expect((await later.finish('delete')).map((c) => [c.kind, c.id])).toEqual([['deleted', 'a']]);
  });
});

describe('change detection', () => {
  const pass = async (previous: Buffer | undefined, records: Array<Record<string, unknown>>) => {
    const d = new ChangeDetector('controls', previous, { idPath: 'id' });
    const changes = d.page(records);
    const snapshot = d.takePageEntries();
    return { changes, deletions: await d.finish('delete'), snapshot, counts: d.counts };
  };

  it('first pass creates everything; then created, updated, deleted and unchanged are exact', async () => {
    const first = await pass(undefined, [
      { id: 'a', v: 1 },
      { id: 'b', v: 1 },
      { id: 'c', v: 1 },
    ]);
    expect(first.counts).toEqual({ read: 3, created: 3, updated: 0, deleted: 0, unchanged: 0 });
    const second = await pass(first.snapshot, [
      { id: 'a', v: 1 },
      { id: 'b', v: 2 },
      { id: 'd', v: 1 },
    ]);
    expect(second.counts).toEqual({ read: 3, created: 1, updated: 1, deleted: 1, unchanged: 1 });
    expect(second.changes.map((c) => `${c.kind} ${c.id}`)).toEqual(['updated b', 'created d']);
    expect(second.deletions).toEqual([
      expect.objectContaining({ kind: 'deleted', id: 'c', stream: 'controls' }),
    ]);
    expect(second.deletions[0]).not.toHaveProperty('record');
    // Delivered again (a retried run), the same changes carry the same ids.
    const again = await pass(first.snapshot, [
      { id: 'a', v: 1 },
      { id: 'b', v: 2 },
      { id: 'd', v: 1 },
    ]);
    expect(again.changes.map((c) => c.changeId)).toEqual(second.changes.map((c) => c.changeId));
    expect(again.deletions[0].changeId).toBe(second.deletions[0].changeId);
    // A deletion never reuses the id of the change that created the record.
    const created = first.changes.find((c) => c.id === 'c');
    expect(second.deletions[0].changeId).not.toBe(created?.changeId);
  });

  it('an id seen twice in a pass counts once; a record without an id is a clear error', async () => {
    const first = await pass(undefined, [{ id: 'a' }]);
    const d = new ChangeDetector('controls', first.snapshot, { idPath: 'id' });
    d.page([{ id: 'a' }, { id: 'a' }]);
    expect(d.counts.unchanged).toBe(1);
    expect(() => d.page([{ name: 'no id' }])).toThrow('a controls record has no id');
  });

  it("an incremental stream's high-water mark is the greatest change time seen, in any order or offset, kept on resume", async () => {
    const d = new ChangeDetector('controls', undefined, { idPath: 'id', highWaterField: 'meta.changed' });
    expect(d.highWater).toBeUndefined();
    d.page([
      { id: 'a', meta: { changed: '2026-03-01T10:00:00Z' } },
      { id: 'b', meta: { changed: '2026-03-01T12:30:00+02:00' } }, // 10:30 UTC: the greatest
      { id: 'c', meta: { changed: '2026-03-01T09:00:00.500Z' } },
    ]);
    expect(d.highWater).toBe('2026-03-01T10:30:00.000Z');
    d.page([{ id: 'd', meta: { changed: '2026-02-01T00:00:00Z' } }]);
    expect(d.highWater).toBe('2026-03-01T10:30:00.000Z');
    expect(() => d.page([{ id: 'e', meta: { changed: 'yesterday' } }])).toThrow(
      'controls record "e": meta.changed is not a date-time',
    );
    // Resumed from a checkpoint, a later page only moves the mark forward.
    const resumed = new ChangeDetector('controls', undefined, {
      idPath: 'id',
      highWaterField: 'meta.changed',
    });
    await resumed.resume({ counts: d.counts, highWater: d.highWater }, (async function* () {})());
    expect(resumed.highWater).toBe('2026-03-01T10:30:00.000Z');
    resumed.page([{ id: 'f', meta: { changed: '2026-03-01T10:00:00Z' } }]);
    expect(resumed.highWater).toBe('2026-03-01T10:30:00.000Z');
    resumed.page([{ id: 'g', meta: { changed: '2026-03-02T00:00:00Z' } }]);
    expect(resumed.highWater).toBe('2026-03-02T00:00:00.000Z');
  });
});

describe('streams', () => {
  it('six default streams for the sandbox kinds, every one a paged query', () => {
    expect(SANDBOX_STREAMS.map((s) => s.name)).toEqual([
      'controls',
      'evidence',
      'personnel',
      'kpis',
      'reports',
      'users',
    ]);
    for (const s of SANDBOX_STREAMS) expect(s.document).toContain('pageInfo { hasNextPage endCursor }');
  });

  it('SYNC_STREAMS selects; an unknown name fails naming the known ones', () => {
    expect(resolveStreams({ select: ['users', 'kpis'] }).map((s) => s.name)).toEqual(['users', 'kpis']);
    const err = (() => {
      try {
        resolveStreams({ select: ['users', 'nope'] });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toContain(
      'unknown stream nope; known: controls, evidence, personnel, kpis, reports, users',
    );
  });

  it('a streams file is the catalog; a bad one names the stream and the field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-streams-'));
    const good = join(dir, 'good.json');
    writeFileSync(
      good,
      JSON.stringify({
        streams: [
          {
            name: 'risks',
            document:
              'query Risks($first: Int, $after: String) { risks(first: $first, after: $after) { nodes { key } page { more next } } }',
            paths: { records: 'risks.nodes', hasNextPage: 'risks.page.more', endCursor: 'risks.page.next' },
            idPath: 'key',
            pageSize: 50,
          },
        ],
      }),
    );
    const streams = resolveStreams({ file: good });
    expect(streams.map((s) => s.name)).toEqual(['risks']);
    expect(streams.find((s) => s.name === 'risks')).toMatchObject({
      idPath: 'key',
      pageSize: 50,
      paths: { node: '', cursorVariable: 'after' },
    });
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        streams: [{ name: 'risks', document: 'query { x }', paths: { records: 'x' }, pageSize: 5000 }],
      }),
    );
    const err = (() => {
      try {
        resolveStreams({ file: bad });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toContain('stream risks: paths.endCursor');
    expect(err?.message).toContain('stream risks: pageSize');
  });
});
