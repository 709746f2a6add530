import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { driveDelta, readDelta, runAt } from '../helpers/delta';

/**
 * An erasure of a Delta sink whose storage fails under it (the built sink in its own process; the store's chosen
 * operation fails before acting, or acts and loses its answer): the erasure says it failed, the tables stay whole and
 * readable, and the same erasure asked again finishes it — the key in neither table, every other row once.
 */
jest.setTimeout(180_000);

const fields = ['id', 'title', 'score', 'done', 'tags'];
const ROWS = 300;
const KEY = 'r0000042';
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ti-delta-erase-faults-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function loaded(name: string) {
  const store = { folder: join(root, name) };
  const options = { deletionVectors: true, rowsPerFile: 100 };
  expect(
    await driveDelta({
      store,
      options,
      fields,
      runId: runAt('2026-11-28T09:00:00.000Z'),
      generate: { kind: 'created', from: 0, to: ROWS, pageSize: 100 },
    }),
  ).toMatchObject({ ok: true });
  expect(
    await driveDelta({
      store,
      options,
      fields,
      runId: runAt('2026-11-28T10:00:00.000Z'),
      generate: { kind: 'updated', from: 40, to: 45, extra: { title: 'changed' } },
    }),
  ).toMatchObject({ ok: true });
  return { store, options };
}

async function tables(name: string) {
  const current = await readDelta(join(root, name, 'items'));
  const changes = await readDelta(join(root, name, 'items_changes'));
  return {
    current: current.rows.map((r) => String(r._key)),
    changes: changes.rows.map((r) => String(r.key)),
  };
}

describe('an erasure whose storage fails under it', () => {
  it.each([
    ['a data file refused before it is written', { failBefore: '^items/tenant-integrations-.*\\.parquet$' }],
    ['the current table’s commit written, its answer lost', { loseAfter: '^items/_delta_log/\\d+\\.json$' }],
    [
      'the changes table’s commit refused, the current table’s done',
      { failBefore: '^items_changes/_delta_log/\\d+\\.json$' },
    ],
  ])('%s: failed and said; asked again, finished', async (_what, fault) => {
    const name = Object.values(fault)[0].replace(/\W/g, '').slice(0, 20);
    const { store, options } = await loaded(name);
    const failed = await driveDelta({ op: 'erase', store, options, key: KEY, fault });
    expect(failed.ok).toBe(false);
    // Whatever landed, the tables read whole: every other key once.
    const mid = await tables(name);
    expect(mid.current.filter((k) => k !== KEY)).toHaveLength(ROWS - 1);
    expect(new Set(mid.current).size).toBe(mid.current.length);
    const again = await driveDelta({ op: 'erase', store, options, key: KEY });
    expect(again).toMatchObject({ ok: true });
    const after = await tables(name);
    expect([after.current.includes(KEY), after.changes.includes(KEY)]).toEqual([false, false]);
    expect(after.current).toHaveLength(ROWS - 1);
    // Its created change and its update, gone; the other 304 changes there once.
    expect(after.changes).toHaveLength(ROWS + 5 - 2);
    const last = await driveDelta({ op: 'erase', store, options, key: KEY });
    expect(last).toMatchObject({ ok: true, result: { erased: [] } });
  });
});
