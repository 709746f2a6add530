import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { changesOf, driveDelta, readDelta, runAt } from '../helpers/delta';

/**
 * The delta sink's tables as Apache Spark with Delta Lake reads them — the protocol's reference implementation, what
 * Databricks and Fabric run: the current table at its latest version and at an earlier one, the changes table, the
 * history, a schema grown under `propagate`, and our checkpoint. Then Spark writes to the table itself (OPTIMIZE
 * compacts its files, without this sink's bucket tags) and the sink's next commit builds on Spark's: both Spark and
 * delta-rs read the result. The sink runs in its own process (test/helpers/delta-driver.mjs).
 */
jest.setTimeout(600_000);

const SPARK_PYTHON = process.env.SPARK_PYTHON ?? resolve(__dirname, '../../.ci/spark-venv/bin/python');
const SPARK = resolve(__dirname, '../helpers/spark-delta.py');

function spark(commands: unknown[]): Promise<unknown[]> {
  if (!existsSync(SPARK_PYTHON))
    throw new Error(
      `no Python with pyspark and delta-spark at ${SPARK_PYTHON}: run .ci/run once, or set SPARK_PYTHON`,
    );
  return new Promise((done, fail) =>
    execFile(
      SPARK_PYTHON,
      [SPARK, JSON.stringify(commands)],
      { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) =>
        err
          ? fail(new Error(`spark: ${stderr.slice(-3000) || err.message}`))
          : done(JSON.parse(stdout.trim().split('\n').at(-1) as string) as unknown[]),
    ),
  );
}

const FIELDS = ['id', 'title', 'score', 'done', 'tags'];

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ti-delta-spark-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('delta sink tables, read and written by Apache Spark with Delta Lake', () => {
  it('Spark reads every version the sink wrote, its checkpoint and its grown schema; after Spark’s OPTIMIZE the sink commits on top and both readers agree', async () => {
    const store = { folder: root };
    const options = { checkpointInterval: 2 };
    const runs = [
      {
        runId: runAt('2026-11-28T09:00:00.000Z'),
        pages: [changesOf('created', 0, 20), changesOf('created', 20, 40)],
      },
      {
        runId: runAt('2026-11-28T10:00:00.000Z'),
        pages: [changesOf('updated', 0, 3, { title: 'changed' }), changesOf('deleted', 30, 32)],
      },
      {
        runId: runAt('2026-11-28T11:00:00.000Z'),
        pages: [changesOf('updated', 5, 8, { owner: { name: 'Ada' } })],
        fields: [...FIELDS, 'owner'],
      },
    ];
    for (const run of runs)
      expect(await driveDelta({ store, fields: FIELDS, options, ...run })).toMatchObject({
        ok: true,
        result: { rejected: 0 },
      });

    const items = join(root, 'items');
    const changes = join(root, 'items_changes');
    const [latest, first, log, history] = (await spark([
      { op: 'read', path: items },
      { op: 'read', path: items, version: 0 },
      { op: 'read', path: changes },
      { op: 'history', path: items },
      { op: 'optimize', path: items },
    ])) as [
      { schema: string[][]; rows: Array<Record<string, unknown>> },
      { rows: unknown[] },
      { rows: Array<Record<string, unknown>> },
      unknown[],
    ];
    expect(latest.schema).toEqual([
      ['_key', 'string'],
      ['id', 'string'],
      ['title', 'string'],
      ['score', 'double'],
      ['done', 'boolean'],
      ['tags', 'string'],
      ['owner', 'string'],
    ]);
    expect(latest.rows).toHaveLength(38);
    expect(latest.rows.find((r) => r._key === 'r0001')).toEqual({
      _key: 'r0001',
      id: 'r0001',
      title: 'changed',
      score: 0.5,
      done: false,
      tags: '["a","1"]',
      owner: null,
    });
    expect(latest.rows.filter((r) => r.owner).map((r) => r._key)).toEqual(['r0005', 'r0006', 'r0007']);
    expect(first.rows).toHaveLength(40);
    expect(log.rows).toHaveLength(40 + 5 + 3);
    expect(log.rows.filter((r) => r.kind === 'deleted').map((r) => [r.key, r.record])).toEqual([
      ['r0030', null],
      ['r0031', null],
    ]);
    expect(history).toEqual([
      [0, 'MERGE'],
      [1, 'MERGE'],
      [2, 'MERGE'],
    ]);
    // Spark read the table through the sink's checkpoint of version 1 (every two versions).
    expect(existsSync(join(items, '_delta_log', '00000000000000000001.checkpoint.parquet'))).toBe(true);

    // Spark compacted the files (version 3, its own commit); the sink's next run builds on it.
    expect(
      await driveDelta({
        store,
        fields: [...FIELDS, 'owner'],
        options,
        runId: runAt('2026-11-28T12:00:00.000Z'),
        pages: [changesOf('updated', 10, 11, { title: 'after Spark' })],
      }),
    ).toMatchObject({ ok: true });
    const [after, afterHistory] = (await spark([
      { op: 'read', path: items },
      { op: 'history', path: items },
    ])) as [{ rows: Array<Record<string, unknown>> }, unknown[]];
    expect(afterHistory).toEqual([
      [0, 'MERGE'],
      [1, 'MERGE'],
      [2, 'MERGE'],
      [3, 'OPTIMIZE'],
      [4, 'MERGE'],
    ]);
    expect(after.rows).toHaveLength(38);
    expect(after.rows.find((r) => r._key === 'r0010')?.title).toBe('after Spark');
    for (const reader of ['node', 'delta-rs'] as const)
      expect([reader, (await readDelta(items, { reader })).rows]).toEqual([reader, after.rows]);

    // Spark deletes rows itself, with deletion vectors in a file of its own (`u`); the sink's next run reads them, adds
    // its own, and leaves Spark's file where it is.
    await spark([{ op: 'sql', sql: `DELETE FROM delta.\`${items}\` WHERE _key IN ('r0012', 'r0013')` }]);
    const sparksVector = readdirSync(items).filter((f) => f.startsWith('deletion_vector_'));
    expect(sparksVector).toHaveLength(1);
    expect(
      await driveDelta({
        store,
        fields: [...FIELDS, 'owner'],
        options,
        runId: runAt('2026-11-28T13:00:00.000Z'),
        pages: [
          changesOf('updated', 14, 15, { title: 'after Spark’s delete' }),
          changesOf('deleted', 15, 16),
        ],
        clockOffsetSeconds: 30 * 24 * 3600,
      }),
    ).toMatchObject({ ok: true });
    const [final] = (await spark([{ op: 'read', path: items }])) as [
      { rows: Array<Record<string, unknown>> },
    ];
    expect(final.rows.map((r) => r._key)).not.toEqual(expect.arrayContaining(['r0012']));
    expect(final.rows).toHaveLength(38 - 3);
    expect(final.rows.find((r) => r._key === 'r0014')?.title).toBe('after Spark’s delete');
    for (const reader of ['node', 'delta-rs'] as const)
      expect([reader, (await readDelta(items, { reader })).rows]).toEqual([reader, final.rows]);
    expect(readdirSync(items).filter((f) => f.startsWith('deletion_vector_'))).toEqual(sparksVector);
  });

  it('a table Spark made where a stream’s table would go is refused by name, and every file of it stays', async () => {
    const table = join(root, 'taken', 'items');
    await spark([
      {
        op: 'sql',
        sql: `CREATE TABLE delta.\`${table}\` (id STRING, title STRING) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')`,
      },
      { op: 'sql', sql: `INSERT INTO delta.\`${table}\` VALUES ('a', 'one'), ('b', 'two'), ('c', 'three')` },
      { op: 'sql', sql: `DELETE FROM delta.\`${table}\` WHERE id = 'b'` },
    ]);
    const before = readdirSync(table, { recursive: true }).sort();
    const refused = await driveDelta({
      store: { folder: join(root, 'taken') },
      fields: FIELDS,
      runId: runAt('2026-11-28T09:00:00.000Z'),
      pages: [changesOf('created', 0, 5)],
      clockOffsetSeconds: 30 * 24 * 3600,
    });
    expect(refused).toMatchObject({ ok: false, code: 'sink_location_taken' });
    expect(refused.error).toContain(table);
    expect(readdirSync(table, { recursive: true }).sort()).toEqual(before);
    const [rows] = (await spark([{ op: 'read', path: table }])) as [{ rows: unknown[] }];
    expect(rows.rows).toHaveLength(2);
  });
});
