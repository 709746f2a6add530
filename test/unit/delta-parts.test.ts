import { appIdOf, runVersion } from '../../shared/sinks/delta/marks';
import { cellOf, columnsOf, rowOf, schemaString, Stats } from '../../shared/sinks/delta/columns';
import {
  deserializeRows,
  inlineVector,
  rowsOf,
  serializeRows,
  vectorFile,
  z85Decode,
  z85Encode,
} from '../../shared/sinks/delta/deletion-vectors';
import {
  apply,
  DV_PROTOCOL,
  emptySnapshot,
  PLAIN_PROTOCOL,
  unwritable,
} from '../../shared/sinks/delta/actions';
import { intervalMs, retentionOf } from '../../shared/sinks/delta/retention';
import { isOwnFile, isStagedFile, tablesOf } from '../../shared/sinks/delta/names';
import { nameCollisions, refusedByName } from '../../shared/sinks/names';
import type { ChangeSink } from '../../shared/sinks/types';

describe('delta sink: marks and columns', () => {
  it('a run’s mark is its start in milliseconds, read from the run id; a later run has a greater one, and an id without its start is refused', () => {
    expect(runVersion('2026-11-28T09-15-30-250Z-1a2b3c4d')).toBe(Date.parse('2026-11-28T09:15:30.250Z'));
    expect(runVersion('2026-11-28T09-15-30-251Z-00000000')).toBeGreaterThan(
      runVersion('2026-11-28T09-15-30-250Z-ffffffff'),
    );
    expect(() => runVersion('run-1')).toThrow(/begins with its start time/);
    expect(() => runVersion('2026-13-45T99-00-00-000Z-x')).toThrow(/begins with its start time/);
    expect(appIdOf('acme')).toBe('tenant-integrations/acme');
  });

  it('a record becomes a row of the table’s columns: objects as JSON text, a value that does not fit named', () => {
    const columns = columnsOf(
      schemaString([
        ['id', 'string'],
        ['score', 'double'],
        ['ok', 'boolean'],
        ['owner', 'string'],
      ]),
    );
    expect(
      rowOf('k1', { id: 'k1', score: 2.5, ok: true, owner: { name: 'Ada' }, extra: 1 }, columns),
    ).toEqual({
      row: { _key: 'k1', id: 'k1', score: 2.5, ok: true, owner: '{"name":"Ada"}' },
    });
    expect(rowOf('k2', { id: 'k2' }, columns)).toEqual({
      row: { _key: 'k2', id: 'k2', score: null, ok: null, owner: null },
    });
    expect(rowOf('k3', { score: 'high' }, columns)).toEqual({
      misfit: 'field score is string where the table’s column is double',
    });
    expect(cellOf(7, 'string')).toBe('7');
    expect(() => columnsOf(JSON.stringify({ fields: [{ name: 'm', type: { type: 'map' } }] }))).toThrow(
      /does not write/,
    );
  });

  it('statistics: rows, nulls, and bounds only where every reader orders values as we do', () => {
    const stats = new Stats([
      ['_key', 'string'],
      ['n', 'double'],
      ['t', 'string'],
      ['b', 'boolean'],
    ]);
    for (const row of [
      { _key: 'b', n: 2, t: 'zebra', b: true },
      { _key: 'a', n: -1, t: '𝔘nicode', b: null },
      { _key: 'c', n: null, t: null, b: false },
    ])
      stats.add(row);
    expect(JSON.parse(stats.toJSON())).toEqual({
      numRecords: 3,
      minValues: { _key: 'a', n: -1 },
      maxValues: { _key: 'c', n: 2 },
      nullCount: { _key: 0, n: 1, t: 1, b: 1 },
    });
  });
});

describe('delta sink: deletion vectors', () => {
  it('row sets of every container kind survive the round trip: a few rows, a dense run (a bitmap container), rows past 65 535 and past 2^32', () => {
    const sets = [
      [0],
      [3, 4, 7, 11, 18, 29],
      Array.from({ length: 5000 }, (_, i) => i * 3), // > 4 096 in one container: a bitmap
      [65_535, 65_536, 131_072, 200_000],
      [1, 2 ** 32 + 5, 2 ** 33],
    ];
    for (const rows of sets) {
      const bytes = serializeRows(rows);
      expect([...deserializeRows(bytes)].sort((a, b) => a - b)).toEqual([...rows].sort((a, b) => a - b));
      const dv = inlineVector(new Set(rows));
      expect(dv).toMatchObject({ storageType: 'i', sizeInBytes: bytes.length, cardinality: rows.length });
      expect(z85Decode(dv?.pathOrInlineDv ?? '').subarray(0, bytes.length)).toEqual(bytes);
    }
    expect(inlineVector(new Set())).toBeUndefined();
  });

  it('Z85 is the ZeroMQ alphabet, four bytes a five-character group (the spec’s own test vector), and bad text is refused', () => {
    const hello = Uint8Array.from([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b]);
    expect(z85Encode(hello)).toBe('HelloWorld');
    expect(z85Decode('HelloWorld')).toEqual(hello);
    expect(() => z85Decode('Hell')).toThrow(/multiple of five/);
    expect(() => z85Decode('Hell~')).toThrow(/holds/);
  });

  it('a vector in a file (Spark’s `u`) is found by its UUID, its framing and checksum checked; an absolute path is not read', async () => {
    // The UUID of PROTOCOL.md's first example, with its random prefix.
    const dv = {
      storageType: 'u' as const,
      pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^',
      offset: 1,
      sizeInBytes: 0,
      cardinality: 3,
    };
    expect(vectorFile(dv)).toBe('ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin');
    const data = serializeRows([2, 5, 9]);
    const { crc32 } = await import('node:zlib');
    const file = Buffer.concat([
      Buffer.from([1]),
      Buffer.from(Uint32Array.of(0).buffer), // placeholder, set below
      Buffer.from(data),
      Buffer.alloc(4),
    ]);
    file.writeInt32BE(data.length, 1);
    file.writeUInt32BE(crc32(data) >>> 0, 5 + data.length);
    const read = async (_: string, start: number, end: number) => file.subarray(start, end);
    expect([...(await rowsOf({ ...dv, sizeInBytes: data.length }, read))]).toEqual([2, 5, 9]);
    file[6] ^= 0xff; // a flipped bit in the vector
    await expect(rowsOf({ ...dv, sizeInBytes: data.length }, read)).rejects.toThrow(/checksum/);
    await expect(rowsOf({ ...dv, storageType: 'p' }, read)).rejects.toThrow(/absolute path/);
  });
});

describe('delta sink: what it writes, keeps and owns', () => {
  it('a file given a deletion vector stays in the table whichever order its commit lists the new `add` and the old `remove` (Spark writes the `add` first)', () => {
    const file = {
      path: 'part-1.parquet',
      partitionValues: {},
      size: 9,
      modificationTime: 1,
      dataChange: true,
    };
    const dv = {
      storageType: 'u' as const,
      pathOrInlineDv: 'o)C1:9k$jAVJnVM>T[h.',
      offset: 1,
      sizeInBytes: 36,
      cardinality: 2,
    };
    for (const order of ['add first', 'remove first']) {
      const state = emptySnapshot();
      apply(state, { add: file });
      const next = [
        { add: { ...file, deletionVector: dv } },
        { remove: { path: file.path, deletionTimestamp: 2, dataChange: true } },
      ];
      for (const a of order === 'add first' ? next : next.reverse()) apply(state, a);
      expect([order, state.files.get(file.path)?.deletionVector]).toEqual([order, dv]);
      expect(state.tombstones.has(file.path)).toBe(false);
    }
    // Removing the file as it now is (with its vector) takes it out.
    const state = emptySnapshot();
    apply(state, { add: { ...file, deletionVector: dv } });
    apply(state, { remove: { path: file.path, deletionTimestamp: 3, dataChange: true, deletionVector: dv } });
    expect(state.files.size).toBe(0);
    expect(state.tombstones.has(file.path)).toBe(true);
  });

  it('writes protocol 1 / 2 and 3 / 7 with deletion vectors; refuses a table with any other feature, append-only or with invariants', () => {
    expect(unwritable(PLAIN_PROTOCOL)).toBeUndefined();
    expect(unwritable(DV_PROTOCOL)).toBeUndefined();
    // Spark moves a legacy table to table features listing the two legacy writer features.
    expect(
      unwritable({ ...DV_PROTOCOL, writerFeatures: ['appendOnly', 'invariants', 'deletionVectors'] }),
    ).toBeUndefined();
    expect(unwritable({ minReaderVersion: 2, minWriterVersion: 5 })).toMatch(/reader 2 \/ writer 5/);
    expect(
      unwritable({
        ...DV_PROTOCOL,
        readerFeatures: ['deletionVectors', 'columnMapping'],
        writerFeatures: ['columnMapping'],
      }),
    ).toMatch(/columnMapping/);
    expect(unwritable({ ...DV_PROTOCOL, writerFeatures: ['deletionVectors', 'rowTracking'] })).toMatch(
      /rowTracking/,
    );
    const meta = {
      id: 'x',
      format: { provider: 'parquet' as const, options: {} },
      schemaString: '{}',
      partitionColumns: [],
    };
    expect(unwritable(PLAIN_PROTOCOL, { ...meta, configuration: { 'delta.appendOnly': 'true' } })).toMatch(
      /append-only/,
    );
  });

  it('reads a table’s intervals as Delta writes them, keeps the longer retention, and deletes nothing on a property it cannot read', () => {
    expect(intervalMs('interval 7 days')).toBe(7 * 24 * 3_600_000);
    expect(intervalMs('168 hours')).toBe(168 * 3_600_000);
    expect(intervalMs('INTERVAL 1 WEEK')).toBe(7 * 24 * 3_600_000);
    expect(intervalMs('interval 1 day 12 hours')).toBe(36 * 3_600_000);
    for (const bad of ['interval 1 month', 'soon', 'interval -1 days', 'interval 7'])
      expect(intervalMs(bad)).toBeUndefined();
    const settings = { retentionHours: 168, checkpointInterval: 10 };
    const meta = (configuration: Record<string, string>) => ({
      id: 'x',
      format: { provider: 'parquet' as const, options: {} },
      schemaString: '{}',
      partitionColumns: [],
      configuration,
    });
    expect(retentionOf(undefined, settings)).toEqual({
      deletedFileMs: 168 * 3_600_000,
      logMs: 30 * 24 * 3_600_000,
      checkpointInterval: 10,
    });
    expect(
      retentionOf(
        meta({
          'delta.deletedFileRetentionDuration': 'interval 30 days',
          'delta.logRetentionDuration': 'interval 60 days',
          'delta.checkpointInterval': '5',
        }),
        settings,
      ),
    ).toEqual({ deletedFileMs: 30 * 24 * 3_600_000, logMs: 60 * 24 * 3_600_000, checkpointInterval: 5 });
    // Shorter than the setting: the setting (the longer) is kept.
    expect(
      retentionOf(meta({ 'delta.deletedFileRetentionDuration': 'interval 1 hours' }), settings).deletedFileMs,
    ).toBe(168 * 3_600_000);
    expect(
      retentionOf(meta({ 'delta.deletedFileRetentionDuration': 'interval 3 months' }), settings)
        .deletedFileMs,
    ).toBe(Infinity);
  });

  it('knows its own files by their names: data files (this release’s and the first’s), half-made files and staged pages, never another engine’s', () => {
    expect(tablesOf('orders')).toEqual({ current: 'orders', changes: 'orders_changes' });
    for (const own of [
      'tenant-integrations-3935a07c-416b-4344-ad97-2a38342ee2fc.snappy.parquet',
      'part-3935a07c-416b-4344-ad97-2a38342ee2fc.snappy.parquet',
      '_delta_log/00000000000000000003.json.3935a07c-416b-4344-ad97-2a38342ee2fc.tmp',
    ])
      expect([own, isOwnFile(own)]).toEqual([own, true]);
    for (const theirs of [
      'part-00000-3935a07c-416b-4344-ad97-2a38342ee2fc-c000.snappy.parquet',
      'part-00001-3935a07c-416b-4344-ad97-2a38342ee2fc-c000.zstd.parquet',
      'deletion_vector_0c6cbaaf-5e04-4c9d-8959-1088814f58ef.bin',
      'metadata/00001-a.metadata.json',
      'date=2026-01-01/tenant-integrations-3935a07c-416b-4344-ad97-2a38342ee2fc.snappy.parquet',
      'readme.txt',
    ])
      expect([theirs, isOwnFile(theirs)]).toEqual([theirs, false]);
    expect(isStagedFile('_staging/2026-11-28T09-00-00-000Z-0000beef/00000001.ndjson')).toBe(true);
    expect(isStagedFile('_staging/notes.txt')).toBe(false);
  });
});

describe('names a sink makes of streams', () => {
  const sink = (names: (s: string) => string[], ownNames: string[] = []) =>
    ({ names, ownNames }) as unknown as ChangeSink;
  it('finds every place two streams share — `X` and `X_changes` for the delta sink, `X` and `x` anywhere — and a stream named like a sink’s own table', () => {
    const delta = sink((s) => [`lake/${s}`, `lake/${s}_changes`]);
    expect(nameCollisions(delta, ['orders', 'orders_changes', 'users'])).toEqual([
      { place: 'lake/orders_changes', streams: ['orders', 'orders_changes'], own: false },
    ]);
    expect(nameCollisions(delta, ['Controls', 'controls']).map((c) => c.streams)).toEqual([
      ['Controls', 'controls'],
      ['Controls', 'controls'],
    ]);
    const pg = sink((s) => [`schema.${s}`], ['schema._sync_pages']);
    const refused = refusedByName(nameCollisions(pg, ['_sync_pages', 'orders']));
    expect([...refused.keys()]).toEqual(['_sync_pages']);
    expect(refused.get('_sync_pages')).toMatch(/keeps for itself: give it another name/);
    expect(
      nameCollisions(
        sink(() => []),
        ['a', 'A'],
      ),
    ).toEqual([]); // a webhook names nothing
  });
});
