import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { resolveStreams } from '../../sandbox/streams';
import { LocalFileSecretStore } from '../../shared/secrets';
import { BlobStore } from '../../shared/sinks/delta';
import { lazyContainer } from '../../shared/state/lazy';
import { runCli } from '../helpers/cli';
import { asRow, changesOf, driveDelta, itemRecord, readDelta, runAt } from '../helpers/delta';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';
import { sourceRecords } from '../helpers/source';

/**
 * The delta sink, read back by delta-rs (PyPI's `deltalake`, a reader nobody here wrote): the CLI fills a current
 * table and a changes table per stream from the sandbox; after changes at the source the current table equals it
 * again with only the touched files rewritten, and every change is in the changes table once. Then the edges: the
 * answer of a commit lost after it was written, a page delivered twice, a data file written and its commit never
 * made, two writers racing for one version (on Azurite), a field added under `propagate` and `report`, a checkpoint
 * delta-rs reads without the commits before it, and retention keeping what a reader of a kept version needs.
 */
jest.setTimeout(240_000);

const STREAMS = resolveStreams({});
let sb: SandboxFixture;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  sb = await sandboxFixture({ records: 150 });
  dir = mkdtempSync(join(tmpdir(), 'ti-delta-'));
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  // Ten rows a file: the 150 records of a stream are spread over 16 files, so a small change touches few of them.
  env = {
    ...sb.settings,
    LOCAL_SECRETS_FILE: secretsFile,
    AzureWebJobsStorage: '',
    DELTA_ROWS_PER_FILE: '10',
  };
});
afterAll(async () => {
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Summary {
  runId: string;
  streams: Record<string, { created: number; updated: number; deleted: number }>;
}
const sync = async (sink: string, extra: Record<string, string> = {}, how = '--full-pass') => {
  const r = await runCli(['sync', '--sink', sink, how, '--json'], {
    env: { ...env, ...extra },
    cwd: dir,
  });
  expect([r.code, r.code ? r.stdout + r.stderr : '']).toEqual([0, '']);
  return JSON.parse(r.stdout) as Summary;
};

async function expectEqualToSource(uri: (stream: string) => string, azuriteBlob?: string) {
  for (const { name } of STREAMS) {
    const [want, table] = await Promise.all([
      sourceRecords(env, name),
      readDelta(uri(name), { azuriteBlob }),
    ]);
    expect([name, table.rows.map((r) => r._key)]).toEqual([name, [...want.keys()].sort()]);
    for (const row of table.rows) {
      const record = asRow(want.get(String(row._key)));
      expect([name, Object.fromEntries(Object.keys(record).map((k) => [k, row[k]]))]).toEqual([name, record]);
    }
  }
}

describe('delta sink through `tenant-integrations sync --sink delta:PATH`, read by delta-rs', () => {
  it('makes a current table and a changes table per stream; after creates, updates and deletes the current table equals the source, only touched files rewritten, and each change is in the changes table once', async () => {
    const tables = join(dir, 'tables');
    const first = await sync('delta:tables');
    await expectEqualToSource((s) => join(tables, s));
    for (const { name } of STREAMS) {
      const changes = await readDelta(join(tables, `${name}_changes`));
      expect([name, changes.rows.length]).toEqual([name, first.streams[name].created]);
      expect(new Set(changes.rows.map((r) => r.change_id)).size).toBe(changes.rows.length);
      expect(changes.rows.every((r) => r.kind === 'created' && r.run_id === first.runId)).toBe(true);
    }
    const before = await readDelta(join(tables, 'controls'));
    expect(before.files).toHaveLength(16);
    expect(before.schema[0]).toEqual(['_key', 'string']);

    const mutated = (
      await sb.hook('data/mutate', { collection: 'controls', creates: 3, updates: 4, deletes: 2 })
    ).body as { created: string[]; updated: string[]; deleted: string[] };
    const second = await sync('delta:tables');
    expect(second.streams.controls).toMatchObject({ created: 3, updated: 4, deleted: 2 });
    await expectEqualToSource((s) => join(tables, s));

    const after = await readDelta(join(tables, 'controls'));
    expect(after.version).toBe(1);
    const kept = after.files.filter((f) => before.files.includes(f));
    // Nine keys touch at most nine of the sixteen files; every other file is the same file.
    expect(after.files.length - kept.length).toBeLessThanOrEqual(9);
    expect(kept.length).toBeGreaterThanOrEqual(16 - 9);
    const changes = await readDelta(join(tables, 'controls_changes'));
    const latest = changes.rows.filter((r) => r.run_id === second.runId);
    expect(latest.map((r) => `${r.kind} ${r.key}`).sort()).toEqual(
      [
        ...mutated.created.map((id) => `created ${id}`),
        ...mutated.updated.map((id) => `updated ${id}`),
        ...mutated.deleted.map((id) => `deleted ${id}`),
      ].sort(),
    );
    expect(latest.filter((r) => r.kind === 'deleted').every((r) => r.record === null)).toBe(true);
    expect(changes.rows).toHaveLength(first.streams.controls.created + 9);
    expect(changes.history.map((h) => h.operation).sort()).toEqual(['WRITE', 'WRITE']);

    // Nothing changed: no empty versions.
    await sync('delta:tables');
    expect((await readDelta(join(tables, 'controls'))).version).toBe(1);
    expect((await readDelta(join(tables, 'controls_changes'))).version).toBe(1);
    // Staged pages are gone once their stream is committed.
    expect(existsSync(join(tables, 'controls', '_staging', second.runId))).toBe(false);
  });
});

describe('`doctor` with the delta sink', () => {
  it('checks that the location takes a commit (a file created only if absent, then removed), and names a location that cannot', async () => {
    writeFileSync(join(dir, 'a-file'), '');
    const r = await runCli(['doctor', '--json'], {
      env: { ...env, SYNC_SINKS: `delta:${join(dir, 'doctor-lake')},delta:${join(dir, 'a-file', 'lake')}` },
      cwd: dir,
    });
    const checks = (
      JSON.parse(r.stdout) as { checks: Array<{ name: string; state: string; found: string }> }
    ).checks.filter((c) => c.name === 'sink delta');
    expect(checks.map((c) => c.state)).toEqual(['ok', 'fail']);
    expect(checks[0].found).toContain('takes the app’s commits');
    expect(checks[1].found).toMatch(/ENOTDIR|not a directory/);
    expect(readdirSync(join(dir, 'doctor-lake', '_doctor'))).toEqual([]);
  });
});

const FIELDS = ['id', 'title', 'score', 'tags'];

/** One run of the `items` stream: its pages written (each twice, as a resumed run repeats a page), then ended. */
const run = (
  store: Record<string, unknown>,
  runId: string,
  pages: unknown[][],
  extra: Record<string, unknown> = {},
) => driveDelta({ store, runId, pages, fields: FIELDS, ...extra });

describe('delta sink: exactly once, retention, checkpoints and drift', () => {
  it('a commit whose answer was lost, and a data file whose commit never came: the run resumed writes each table once, and the orphan goes only after retention', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ti-delta-once-'));
    const store = { folder: root };
    const run1 = runAt('2026-11-28T09:00:00.000Z');
    const pages1 = [changesOf('created', 0, 40), changesOf('created', 40, 80)];

    // The current table's first commit is written, and its answer lost.
    const lost = await run(store, run1, pages1, { fault: { loseAfter: '^items/_delta_log/0+\\.json$' } });
    expect(lost).toEqual({ ok: false, error: 'connection reset after the write' });
    expect(await run(store, run1, pages1)).toEqual({ ok: true, result: { rejected: 0 } }); // the run resumed
    const items = await readDelta(join(root, 'items'));
    expect([items.version, items.rows.length]).toEqual([0, 80]);
    const log = await readDelta(join(root, 'items_changes'));
    expect([log.version, log.rows.length]).toEqual([0, 80]);

    // The next run: a data file written, then storage fails before its commit; the run is tried again.
    const run2 = runAt('2026-11-28T10:00:00.000Z');
    const pages2 = [changesOf('updated', 0, 5, { title: 'changed' }), changesOf('deleted', 70, 72)];
    expect(
      await run(store, run2, pages2, { fault: { loseAfter: '^items/part-.*\\.parquet$' } }),
    ).toMatchObject({
      ok: false,
    });
    expect(await run(store, run2, pages2)).toMatchObject({ ok: true });
    const now = await readDelta(join(root, 'items'));
    expect([now.version, now.rows.length]).toEqual([1, 78]);
    expect(now.rows.filter((r) => r.title === 'changed').map((r) => r._key)).toEqual([
      'r0000',
      'r0001',
      'r0002',
      'r0003',
      'r0004',
    ]);
    expect((await readDelta(join(root, 'items_changes'))).rows).toHaveLength(80 + 7);
    const onDisk = () => readdirSync(join(root, 'items')).filter((f) => f.endsWith('.parquet'));
    const unused = (files: string[]) => onDisk().filter((f) => !files.some((u) => u.endsWith(f)));
    // The orphan and the files version 1 replaced are kept: a reader of version 0 still finds all of its files.
    expect(unused(now.files).length).toBeGreaterThan(1);
    expect((await readDelta(join(root, 'items'), { version: 0 })).rows).toHaveLength(80);

    // Past retention, the next run's commit removes them; the latest version reads whole.
    const run3 = runAt('2026-12-05T11:00:00.000Z');
    expect(
      await run(store, run3, [changesOf('updated', 10, 11, { title: 'again' })], {
        clockOffsetSeconds: 169 * 3600,
      }),
    ).toMatchObject({ ok: true });
    const latest = await readDelta(join(root, 'items'));
    expect([latest.version, latest.rows.length]).toEqual([2, 78]);
    // Only what version 2 replaced is kept now (a reader of version 1 needs it); the rest went.
    const replaced = now.files.filter((f) => !latest.files.includes(f)).map((f) => f.split('/').pop());
    expect(replaced).toHaveLength(1);
    expect(unused(latest.files)).toEqual(replaced);
    rmSync(root, { recursive: true, force: true });
  });

  it('a field added to the selection becomes a nullable column under propagate and changes nothing under report; a checkpoint every two versions is what delta-rs reads when the commits before it are gone', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ti-delta-drift-'));
    for (const policy of ['propagate', 'report'] as const) {
      const store = { folder: join(root, policy) };
      const options = { schemaChanges: policy, checkpointInterval: 2 };
      expect(
        await run(store, runAt('2026-11-28T09:00:00.000Z'), [changesOf('created', 0, 30)], { options }),
      ).toMatchObject({ ok: true });
      expect(
        await run(
          store,
          runAt('2026-11-28T10:00:00.000Z'),
          [changesOf('updated', 0, 3, { owner: { name: 'Ada' } })],
          {
            options,
            fields: [...FIELDS, 'owner'],
          },
        ),
      ).toMatchObject({ ok: true });
      const t = await readDelta(join(root, policy, 'items'));
      if (policy === 'propagate') {
        expect(t.schema.map(([n]) => n)).toEqual(['_key', 'id', 'title', 'score', 'tags', 'owner']);
        expect(t.rows.filter((r) => r.owner !== null).map((r) => [r._key, r.owner])).toEqual(
          ['r0000', 'r0001', 'r0002'].map((k) => [k, '{"name":"Ada"}']),
        );
      } else expect(t.schema.map(([n]) => n)).toEqual(['_key', 'id', 'title', 'score', 'tags']);
      expect(t.schema.find(([n]) => n === 'score')?.[1]).toBe('double');
      expect(t.rows).toHaveLength(30);
    }

    // Version 1 made a checkpoint: a copy of the table without commits 0 and 1 reads the same, by delta-rs and by us.
    const table = join(root, 'propagate', 'items');
    const copy = join(root, 'copy');
    cpSync(table, copy, { recursive: true });
    for (const v of [0, 1]) rmSync(join(copy, '_delta_log', `${String(v).padStart(20, '0')}.json`));
    expect(existsSync(join(copy, '_delta_log', '_last_checkpoint'))).toBe(true);
    const [whole, fromCheckpoint] = await Promise.all([readDelta(table), readDelta(copy)]);
    expect(fromCheckpoint.rows).toEqual(whole.rows);
    expect(fromCheckpoint.schema).toEqual(whole.schema);
    expect(fromCheckpoint.version).toBe(1);
    expect(await driveDelta({ op: 'snapshot', store: { folder: root }, table: 'copy' })).toEqual({
      ok: true,
      result: {
        version: 1,
        files: whole.files.length,
        txns: { 'tenant-integrations/acme': Date.parse('2026-11-28T10:00:00.000Z') },
      },
    });
    rmSync(root, { recursive: true, force: true });
  });

  it('a table made small grows: its buckets are multiplied once, and after another engine compacts its files (delta-rs OPTIMIZE) the next commit lays them out again', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ti-delta-grow-'));
    const store = { folder: root };
    const table = join(root, 'items');
    expect(await run(store, runAt('2026-11-28T09:00:00.000Z'), [changesOf('created', 0, 5)])).toMatchObject({
      ok: true,
    });
    expect((await readDelta(table)).files).toHaveLength(1);
    // 105 records at ten a file: sixteen buckets, every row laid out again once.
    expect(await run(store, runAt('2026-11-28T10:00:00.000Z'), [changesOf('created', 5, 105)])).toMatchObject(
      { ok: true },
    );
    const grown = await readDelta(table);
    expect([grown.version, grown.rows.length, grown.files.length]).toEqual([1, 105, 16]);
    expect(
      await run(store, runAt('2026-11-28T11:00:00.000Z'), [changesOf('updated', 7, 8, { title: 'one' })]),
    ).toMatchObject({ ok: true });
    const updated = await readDelta(table);
    expect(updated.files.filter((f) => !grown.files.includes(f))).toHaveLength(1);

    const compacted = await readDelta(table, { optimize: true }); // a commit of delta-rs' own, files without our tags
    expect([compacted.rows.length, compacted.files.length]).toEqual([105, 1]);
    expect(
      await run(store, runAt('2026-11-28T12:00:00.000Z'), [changesOf('updated', 9, 10, { title: 'two' })]),
    ).toMatchObject({ ok: true });
    const after = await readDelta(table);
    expect([after.rows.length, after.files.length]).toEqual([105, 16]);
    expect(
      after.rows
        .filter(
          (r) =>
            r.title !==
            `Record ${String(r._key)
              .slice(1)
              .replace(/^0+(?=.)/, '')}`,
        )
        .map((r) => [r._key, r.title]),
    ).toEqual([
      ['r0007', 'one'],
      ['r0009', 'two'],
    ]);
    rmSync(root, { recursive: true, force: true });
  });
});

describe('delta sink on Blob Storage (Azurite)', () => {
  let azurite: RunningAzurite;
  beforeAll(async () => {
    azurite = await startAzurite();
  });
  afterAll(() => azurite?.stop());

  const blobStore = async (container: string) => {
    const { BlobServiceClient } = await import('@azure/storage-blob');
    const service = BlobServiceClient.fromConnectionString(azurite.connectionString);
    return new BlobStore(lazyContainer(service, container), {
      account: 'devstoreaccount1',
      container,
      prefix: 'lake',
    });
  };

  it('two writers racing for the same versions: each version is won once, and both runs land whole', async () => {
    const [a, b] = [await blobStore('race'), await blobStore('race')];
    const wins = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        [a, b].map((s) => s.createIfAbsent(`t/_delta_log/${i}.json`, String(i))),
      ).flat(),
    );
    for (let i = 0; i < 10; i++) expect(wins.slice(2 * i, 2 * i + 2).sort()).toEqual([false, true]);

    // Two tenants' apps sharing a table: their commits race for each version, and both land.
    const store = { connectionString: azurite.connectionString, container: 'race', prefix: 'lake' };
    const raced = await driveDelta({
      op: 'race',
      runs: [
        {
          store,
          runId: runAt('2026-11-28T09:00:00.000Z'),
          pages: [changesOf('created', 0, 20)],
          fields: FIELDS,
        },
        {
          store,
          runId: runAt('2026-11-28T09:30:00.000Z'),
          pages: [changesOf('created', 20, 40)],
          fields: FIELDS,
          tenant: 'globex',
        },
      ],
    });
    expect(raced).toMatchObject({ ok: true });
    const azuriteBlob = `http://127.0.0.1:${azurite.blobPort}`;
    const changes = await readDelta('az://race/lake/items_changes', { azuriteBlob });
    expect([changes.version, changes.rows.length]).toEqual([1, 40]);
    const items = await readDelta('az://race/lake/items', { azuriteBlob });
    expect([items.version, items.rows.map((r) => r._key)]).toEqual([
      1,
      Array.from({ length: 40 }, (_, i) => itemRecord(i).id),
    ]);
  });

  it('`sync --sink delta` writes the tables to the app’s storage account, equal to the source', async () => {
    await sb.hook('reset');
    // A sink added to a sync that has run before gets changes from then on; `--full` delivers everything to it.
    const result = await sync('delta', { AzureWebJobsStorage: azurite.connectionString }, '--full');
    expect(Object.keys(result.streams).sort()).toEqual(STREAMS.map((s) => s.name).sort());
    await expectEqualToSource((s) => `az://delta-tables/${s}`, `http://127.0.0.1:${azurite.blobPort}`);
  });
});
