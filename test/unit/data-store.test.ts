import { generate, indexOfId, recordId } from '../../sandbox/data/generate';
import { DataStore } from '../../sandbox/data/store';

describe('sandbox data', () => {
  it('a million records per kind cost no memory until a page asks for them', () => {
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const store = new DataStore('big', 1_000_000);
    const page = store.collections.controls.page(100, 999_949);
    expect(page.items).toHaveLength(50);
    expect(page.items.at(-1)?.node.id).toBe('ctl-1000000');
    expect(page.hasNextPage).toBe(false);
    expect(store.collections.users.count).toBe(1_000_000);
    // Six million materialised records would be gigabytes; the overlay store is a few objects.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(20 * 1024 * 1024);
  });

  it('records are a pure function of seed, kind, index and version', () => {
    expect(generate('s', 'evidence', 7, 0)).toEqual(generate('s', 'evidence', 7, 0));
    expect(generate('s', 'evidence', 7, 1)).not.toEqual(generate('s', 'evidence', 7, 0));
    expect(generate('t', 'evidence', 7, 0)).not.toEqual(generate('s', 'evidence', 7, 0));
  });

  it('ids round-trip to indexes and do not cross kinds', () => {
    expect(recordId('kpis', 0)).toBe('kpi-0000001');
    expect(indexOfId('kpis', 'kpi-0000042')).toBe(41);
    expect(indexOfId('kpis', 'ctl-0000042')).toBeUndefined();
    expect(indexOfId('kpis', 'kpi-12345678')).toBe(12_345_677);
  });

  it('pages skip deleted records and report hasNextPage correctly when the tail is deleted', () => {
    const store = new DataStore('s', 10);
    const c = store.collections.reports;
    const { deleted } = store.mutate('reports', 0, 0, 10);
    expect(deleted).toHaveLength(10);
    expect(c.page(5, -1)).toEqual({ items: [], hasNextPage: false, total: 0 });
    const again = new DataStore('s', 3);
    again.mutate('users', 2, 0, 0);
    expect(again.collections.users.page(10, -1).items.map((i) => i.node.id)).toEqual([
      'usr-0000001',
      'usr-0000002',
      'usr-0000003',
      'usr-0000004',
      'usr-0000005',
    ]);
  });

  it('mutations are deterministic for the same seed and sequence', () => {
    const a = new DataStore('same', 1000).mutate('controls', 1, 5, 5);
    const b = new DataStore('same', 1000).mutate('controls', 1, 5, 5);
    expect(a).toEqual(b);
    expect(new Set([...a.updated, ...a.deleted]).size).toBe(10);
  });
});
