import { appIdOf, bucketOf, runVersion } from '../../shared/sinks/delta/marks';
import { cellOf, columnsOf, rowOf, schemaString, Stats } from '../../shared/sinks/delta/columns';

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

  it('keys spread over every bucket, each key always in the same one', () => {
    const seen = new Map<number, number>();
    for (let i = 0; i < 16_000; i++) {
      const b = bucketOf(`ctl-${i}`, 16);
      expect(b).toBe(bucketOf(`ctl-${i}`, 16));
      seen.set(b, (seen.get(b) ?? 0) + 1);
    }
    expect(seen.size).toBe(16);
    for (const n of seen.values()) expect(n).toBeGreaterThan(700); // about 1 000 each
    expect(bucketOf('["a",1]', 1)).toBe(0);
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
