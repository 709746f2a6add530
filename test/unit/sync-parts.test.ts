import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../shared/errors';
import { DEFAULT_STREAMS, resolveStreams } from '../../shared/streams';
import { ChangeDetector } from '../../shared/sync/changes';
import { canonicalJson, changeId, contentHash } from '../../shared/sync/fingerprint';
import { Snapshot, SnapshotWriter } from '../../shared/sync/snapshot';

describe('fingerprints', () => {
  it('the same record in any key order has the same hash; any change in content changes it', () => {
    const a = { id: '1', owner: { name: 'A', email: null }, tags: ['x', 'y'] };
    const b = { tags: ['x', 'y'], owner: { email: null, name: 'A' }, id: '1' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(contentHash(a).equals(contentHash(b))).toBe(true);
    expect(contentHash({ ...a, tags: ['y', 'x'] }).equals(contentHash(a))).toBe(false);
    expect(contentHash({ ...a, owner: { name: 'B', email: null } }).equals(contentHash(a))).toBe(false);
  });

  it('a change id is stable for (stream, id, content) and differs when any of them does', () => {
    const h = contentHash({ id: '1' });
    expect(changeId('controls', '1', h)).toBe(changeId('controls', '1', h));
    expect(changeId('controls', '1', h)).toMatch(/^[0-9a-f]{32}$/);
    expect(changeId('users', '1', h)).not.toBe(changeId('controls', '1', h));
    expect(changeId('controls', '2', h)).not.toBe(changeId('controls', '1', h));
    expect(changeId('controls', '1', contentHash({ id: '1', x: 1 }))).not.toBe(changeId('controls', '1', h));
  });
});

describe('compact snapshot', () => {
  it('round-trips 20 000 entries and finds each id, and only those', () => {
    const w = new SnapshotWriter();
    for (let i = 0; i < 20_000; i++) w.add(Buffer.from(`ctl-${i}`), contentHash({ i }));
    const s = new Snapshot(w.toBuffer());
    expect(s.count).toBe(20_000);
    for (const i of [0, 1, 9_999, 19_999]) {
      const at = s.find(Buffer.from(`ctl-${i}`));
      expect(s.idAt(at)).toBe(`ctl-${i}`);
      expect(s.hashAt(at).equals(contentHash({ i }))).toBe(true);
    }
    expect(s.find(Buffer.from('ctl-20000'))).toBe(-1);
    expect(s.find(Buffer.from('ctl-'))).toBe(-1);
  });

  it('unmarked entries are the ones not seen; a truncated snapshot is an error, not silence', () => {
    const w = new SnapshotWriter();
    for (const id of ['a', 'b', 'c']) w.add(Buffer.from(id), contentHash(id));
    const s = new Snapshot(w.toBuffer());
    expect(s.mark(s.find(Buffer.from('b')))).toBe(true);
    expect(s.mark(s.find(Buffer.from('b')))).toBe(false);
    expect([...s.unmarked()].map((i) => s.idAt(i))).toEqual(['a', 'c']);
    expect(() => new Snapshot(w.toBuffer().subarray(0, 10))).toThrow('truncated');
  });
});

describe('change detection', () => {
  const pass = (previous: Buffer | undefined, records: Array<Record<string, unknown>>) => {
    const d = new ChangeDetector('controls', previous, 'id');
    const changes = d.page(records);
    const { deletions, snapshot } = d.finish();
    return { changes, deletions, snapshot: Buffer.concat(snapshot), counts: d.counts };
  };

  it('first pass creates everything; then created, updated, deleted and unchanged are exact', () => {
    const first = pass(undefined, [
      { id: 'a', v: 1 },
      { id: 'b', v: 1 },
      { id: 'c', v: 1 },
    ]);
    expect(first.counts).toEqual({ read: 3, created: 3, updated: 0, deleted: 0, unchanged: 0 });
    const second = pass(first.snapshot, [
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
    const again = pass(first.snapshot, [
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

  it('an id seen twice in a pass counts once; a record without an id is a clear error', () => {
    const first = pass(undefined, [{ id: 'a' }]);
    const d = new ChangeDetector('controls', first.snapshot, 'id');
    d.page([{ id: 'a' }, { id: 'a' }]);
    expect(d.counts.unchanged).toBe(1);
    expect(() => d.page([{ name: 'no id' }])).toThrow('a controls record has no id');
  });
});

describe('streams', () => {
  it('six default streams for the sandbox kinds, every one a paged query', () => {
    expect(DEFAULT_STREAMS.map((s) => s.name)).toEqual([
      'controls',
      'evidence',
      'personnel',
      'kpis',
      'reports',
      'users',
    ]);
    for (const s of DEFAULT_STREAMS) expect(s.document).toContain('pageInfo { hasNextPage endCursor }');
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

  it('a streams file overrides and adds; a bad one names the stream and the field', () => {
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
    expect(streams.map((s) => s.name)).toContain('risks');
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
    expect(err?.message).toContain('stream risks: paths.hasNextPage');
    expect(err?.message).toContain('stream risks: pageSize');
  });
});
