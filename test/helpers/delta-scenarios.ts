import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { resolveStreams } from '../../sandbox/streams';
import { LocalFileSecretStore } from '../../shared/secrets';
import { BlobStore } from '../../shared/sinks/delta';
import { lazyContainer } from '../../shared/state/lazy';
import { runCli } from './cli';
import { asRow, changesOf, driveDelta, itemRecord, readDelta, runAt, type DeltaReader } from './delta';
import { sandboxFixture, type SandboxFixture } from './sandbox';
import { sourceRecords } from './source';

/**
 * The delta sink's promises, each tried at its edge, read back by `reader` — the tests' Node reader in `npm test`
 * (test/integration/delta-sink.test.ts), delta-rs in the conformance suite (test/conformance/delta-rs.test.ts): the
 * CLI fills a current table and a changes table per stream from the sandbox, equal to the source after creates,
 * updates and deletes with only deletion vectors and one new file written; the answer of a commit lost after it was
 * written; a data file whose commit never came; a field added; a checkpoint read without the commits before it;
 * retention; a place that is not the sink's (an ordinary folder, another engine's table) left whole and the stream
 * refused; streams whose tables would be one refused before anything is written; a run killed 30 days ago cleaned up;
 * the log trimmed; a table without deletion vectors; two writers racing on Azurite.
 */
export function deltaScenarios(reader: DeltaReader): void {
  const read = (uri: string, options: Parameters<typeof readDelta>[1] = {}) =>
    readDelta(uri, { reader, ...options });

  const STREAMS = resolveStreams({});
  let sb: SandboxFixture;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sb = await sandboxFixture({ records: 150 });
    dir = mkdtempSync(join(tmpdir(), 'ti-delta-'));
    const secretsFile = join(dir, 'secrets.json');
    await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
    // Ten rows a file: the 150 records of a stream are 15 files, so a small change touches few of them.
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
    ok: boolean;
    streams: Record<
      string,
      { created: number; updated: number; deleted: number; error?: string; errorCode?: string }
    >;
  }
  const sync = async (sink: string, extra: Record<string, string> = {}, how = '--full-pass', code = 0) => {
    const r = await runCli(['sync', '--sink', sink, how, '--json'], { env: { ...env, ...extra }, cwd: dir });
    expect([r.code, r.code !== code ? r.stdout + r.stderr : '']).toEqual([code, '']);
    return JSON.parse(r.stdout) as Summary;
  };

  async function expectEqualToSource(
    uri: (stream: string) => string,
    azuriteBlob?: string,
    streams = STREAMS,
  ) {
    for (const { name } of streams) {
      const [want, table] = await Promise.all([sourceRecords(env, name), read(uri(name), { azuriteBlob })]);
      expect([name, table.rows.map((r) => r._key)]).toEqual([name, [...want.keys()].sort()]);
      for (const row of table.rows) {
        const record = asRow(want.get(String(row._key)));
        expect([name, Object.fromEntries(Object.keys(record).map((k) => [k, row[k]]))]).toEqual([
          name,
          record,
        ]);
      }
    }
  }

  /** Every file under `root` with the hash of its bytes: what must be left exactly as it was. */
  const contents = (root: string) =>
    Object.fromEntries(
      (readdirSync(root, { recursive: true }) as string[])
        .filter((f) => statSync(join(root, f)).isFile())
        .map((f) => [
          f,
          createHash('sha256')
            .update(readFileSync(join(root, f)))
            .digest('hex'),
        ]),
    );
  const logEntry = (table: string, v: number) =>
    readFileSync(join(table, '_delta_log', `${String(v).padStart(20, '0')}.json`), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);

  describe('through `tenant-integrations sync --sink delta:PATH`', () => {
    it('makes a current table and a changes table per stream; after creates, updates and deletes the current table equals the source with deletion vectors on the files holding the changed keys and one new file, and each change is in the changes table once', async () => {
      const tables = join(dir, 'tables');
      const first = await sync('delta:tables');
      await expectEqualToSource((s) => join(tables, s));
      for (const { name } of STREAMS) {
        const changes = await read(join(tables, `${name}_changes`));
        expect([name, changes.rows.length]).toEqual([name, first.streams[name].created]);
        expect(new Set(changes.rows.map((r) => r.change_id)).size).toBe(changes.rows.length);
        expect(changes.rows.every((r) => r.kind === 'created' && r.run_id === first.runId)).toBe(true);
      }
      const before = await read(join(tables, 'controls'));
      expect(before.files).toHaveLength(Math.ceil(first.streams.controls.created / 10));
      expect(before.schema[0]).toEqual(['_key', 'string']);

      const mutated = (
        await sb.hook('data/mutate', { collection: 'controls', creates: 3, updates: 4, deletes: 2 })
      ).body as { created: string[]; updated: string[]; deleted: string[] };
      const second = await sync('delta:tables');
      expect(second.streams.controls).toMatchObject({ created: 3, updated: 4, deleted: 2 });
      await expectEqualToSource((s) => join(tables, s));

      const after = await read(join(tables, 'controls'));
      expect(after.version).toBe(1);
      // No data file written again: the old ones stay (the rows replaced are in their deletion vectors), and one new
      // file holds the three created and four updated records.
      expect(before.files.filter((f) => !after.files.includes(f))).toEqual([]);
      expect(after.files.filter((f) => !before.files.includes(f))).toHaveLength(1);
      const vectors = logEntry(join(tables, 'controls'), 1).filter((a) => a.add?.deletionVector);
      expect(vectors.length).toBeLessThanOrEqual(6);
      expect(
        vectors.reduce(
          (n, a) => n + Number((a.add.deletionVector as { cardinality: number }).cardinality),
          0,
        ),
      ).toBe(6);

      const changes = await read(join(tables, 'controls_changes'));
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
      expect(changes.history.map((h) => h.operation)).toEqual(['WRITE', 'WRITE']);

      // Nothing changed: no empty versions.
      await sync('delta:tables');
      expect((await read(join(tables, 'controls'))).version).toBe(1);
      expect((await read(join(tables, 'controls_changes'))).version).toBe(1);
      // Staged pages are gone once their stream is committed.
      expect(existsSync(join(tables, 'controls', '_staging', second.runId))).toBe(false);
    });

    it('an ordinary folder and another engine’s table where a stream’s tables would go keep every file as it was (30 days old included); the sync names the path and the fix, and the other streams go on', async () => {
      const lake = join(dir, 'shared-lake');
      // A customer's folder named like the `users` stream: drop files, a readme, an archive — old enough for retention.
      const users = join(lake, 'users');
      mkdirSync(join(users, '2025', '06'), { recursive: true });
      mkdirSync(join(users, 'archive'), { recursive: true });
      writeFileSync(join(users, '2025', '06', 'drop-0001.csv'), 'id,name\n1,Ada\n');
      writeFileSync(join(users, 'readme.txt'), 'not a table\n');
      writeFileSync(join(users, 'archive', '2024.parquet'), 'PAR1…');
      // Another engine's table named like `kpis`: reader 3 / writer 7 with deletion vectors, a deletion vector file and
      // UniForm's Iceberg metadata beside its data.
      const kpis = join(lake, 'kpis');
      mkdirSync(join(kpis, '_delta_log'), { recursive: true });
      mkdirSync(join(kpis, 'metadata'), { recursive: true });
      writeFileSync(
        join(kpis, '_delta_log', '00000000000000000000.json'),
        [
          { commitInfo: { operation: 'CREATE TABLE', engineInfo: 'Apache-Spark/3.5.1 Delta-Lake/3.2.0' } },
          {
            protocol: {
              minReaderVersion: 3,
              minWriterVersion: 7,
              readerFeatures: ['deletionVectors'],
              writerFeatures: ['deletionVectors'],
            },
          },
          {
            metaData: {
              id: 'a1',
              format: { provider: 'parquet', options: {} },
              schemaString:
                '{"type":"struct","fields":[{"name":"id","type":"string","nullable":true,"metadata":{}}]}',
              partitionColumns: [],
              configuration: { 'delta.enableDeletionVectors': 'true' },
            },
          },
        ]
          .map((a) => JSON.stringify(a))
          .join('\n') + '\n',
      );
      writeFileSync(
        join(kpis, 'deletion_vector_0c6cbaaf-5e04-4c9d-8959-1088814f58ef.bin'),
        Buffer.from([1, 0, 0, 0]),
      );
      writeFileSync(join(kpis, 'metadata', '00001-a.metadata.json'), '{}');
      writeFileSync(
        join(kpis, 'part-00000-3935a07c-416b-4344-ad97-2a38342ee2fc.c000.snappy.parquet'),
        'PAR1…',
      );
      const old = new Date(Date.now() - 30 * 24 * 3600_000);
      for (const f of Object.keys(contents(lake))) utimesSync(join(lake, f), old, old);
      const before = contents(lake);

      // Twice: a stream refused once is refused again, and whatever retention would do, it does not do it here.
      for (let i = 0; i < 2; i++) {
        const r = await sync('delta:shared-lake', {}, '--full', 1);
        for (const [stream, path] of [
          ['users', users],
          ['kpis', kpis],
        ]) {
          expect(r.streams[stream]).toMatchObject({ errorCode: 'sink_location_taken' });
          expect(r.streams[stream].error).toContain(path);
          expect(r.streams[stream].error).toMatch(/nothing there was changed or removed/);
        }
        expect(r.streams.users.error).toMatch(/not a Delta table and holds files/);
        expect(r.streams.kpis.error).toMatch(/another engine made/);
        for (const other of ['controls', 'evidence'])
          expect([other, r.streams[other].error]).toEqual([other, undefined]);
      }
      // Every file as it was, and nothing added beside them.
      const after = contents(lake);
      for (const f of Object.keys(before)) expect([f, after[f]]).toEqual([f, before[f]]);
      expect(
        Object.keys(after)
          .filter((f) => /^(users|kpis)\//.test(f))
          .sort(),
      ).toEqual(Object.keys(before).sort());
      await expectEqualToSource(
        (s) => join(lake, s),
        undefined,
        resolveStreams({ select: ['controls', 'evidence'] }),
      );
    });

    it('streams whose tables would be one — `X` and `X_changes`, `X` and `x` — are refused by name before anything is written; the others go on', async () => {
      const defs = resolveStreams({ select: ['controls', 'evidence', 'kpis'] });
      const file = join(dir, 'clashing-streams.json');
      writeFileSync(
        file,
        JSON.stringify({
          streams: [
            ...defs,
            { ...defs.find((s) => s.name === 'evidence'), name: 'controls_changes' },
            { ...defs.find((s) => s.name === 'kpis'), name: 'KPIs' },
          ],
        }),
      );
      const r = await sync('delta:clash', { SYNC_STREAMS_FILE: file }, '--full', 1);
      for (const [stream, other, place] of [
        ['controls', 'controls_changes', 'controls_changes'],
        ['controls_changes', 'controls', 'controls_changes'],
        ['kpis', 'KPIs', 'kpis'],
        ['KPIs', 'kpis', 'kpis'],
      ]) {
        expect([stream, r.streams[stream].errorCode]).toEqual([stream, 'stream_names_collide']);
        expect(r.streams[stream].error).toContain(other);
        expect(r.streams[stream].error?.toLowerCase()).toContain(`/${place.toLowerCase()}`);
      }
      expect(r.streams.evidence.error).toBeUndefined();
      expect(readdirSync(join(dir, 'clash')).sort()).toEqual(['evidence', 'evidence_changes']);
      // doctor says the same, before any run.
      const d = await runCli(['doctor', '--json'], {
        env: { ...env, SYNC_STREAMS_FILE: file, SYNC_SINKS: 'delta:clash' },
        cwd: dir,
      });
      const checks = (
        JSON.parse(d.stdout) as { checks: Array<{ name: string; state: string; found: string }> }
      ).checks;
      for (const stream of ['controls', 'controls_changes', 'kpis', 'KPIs'])
        expect(checks.find((c) => c.name === `stream ${stream}`)).toMatchObject({
          state: 'fail',
          found: expect.stringContaining('would all be written to'),
        });
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
      expect(readdirSync(join(dir, 'doctor-lake'))).toEqual([]); // nothing of the check stays behind
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
  const dataFiles = (table: string) => readdirSync(table).filter((f) => f.endsWith('.parquet'));

  describe('exactly once, retention, checkpoints, drift and housekeeping', () => {
    it('a commit whose answer was lost, and a data file whose commit never came: the run resumed writes each table once, and the orphan goes only after retention', async () => {
      const root = mkdtempSync(join(tmpdir(), 'ti-delta-once-'));
      const store = { folder: root };
      const run1 = runAt('2026-11-28T09:00:00.000Z');
      const pages1 = [changesOf('created', 0, 40), changesOf('created', 40, 80)];

      // The current table's first commit is written, and its answer lost.
      const lost = await run(store, run1, pages1, { fault: { loseAfter: '^items/_delta_log/0+\\.json$' } });
      expect(lost).toMatchObject({ ok: false, error: 'connection reset after the write' });
      expect(await run(store, run1, pages1)).toMatchObject({ ok: true, result: { rejected: 0 } }); // the run resumed
      const items = await read(join(root, 'items'));
      expect([items.version, items.rows.length]).toEqual([0, 80]);
      const log = await read(join(root, 'items_changes'));
      expect([log.version, log.rows.length]).toEqual([0, 80]);

      // The next run: its new rows' file written, then storage fails before its commit; the run is tried again.
      const run2 = runAt('2026-11-28T10:00:00.000Z');
      const pages2 = [changesOf('updated', 0, 5, { title: 'changed' }), changesOf('deleted', 70, 72)];
      expect(
        await run(store, run2, pages2, { fault: { loseAfter: '^items/tenant-integrations-.*\\.parquet$' } }),
      ).toMatchObject({ ok: false });
      expect(await run(store, run2, pages2)).toMatchObject({ ok: true });
      const now = await read(join(root, 'items'));
      expect([now.version, now.rows.length]).toEqual([1, 78]);
      expect(now.rows.filter((r) => r.title === 'changed').map((r) => r._key)).toEqual([
        'r0000',
        'r0001',
        'r0002',
        'r0003',
        'r0004',
      ]);
      expect((await read(join(root, 'items_changes'))).rows).toHaveLength(80 + 7);
      const unused = (files: string[]) =>
        dataFiles(join(root, 'items')).filter((f) => !files.some((u) => u.endsWith(f)));
      // Kept for the retention period: the orphan (a writer may be about to commit it), and the file whose rows were half
      // replaced (r0000–r0009: laid out again) — a reader of version 0 still reads it whole.
      expect(unused(now.files)).toHaveLength(2);
      expect((await read(join(root, 'items'), { version: 0 })).rows).toHaveLength(80);

      // Past retention, the next run removes it; the latest version reads whole.
      const run3 = runAt('2026-12-05T11:00:00.000Z');
      expect(
        await run(store, run3, [changesOf('updated', 10, 11, { title: 'again' })], {
          clockOffsetSeconds: 169 * 3600,
        }),
      ).toMatchObject({ ok: true });
      const latest = await read(join(root, 'items'));
      expect([latest.version, latest.rows.length]).toEqual([2, 78]);
      expect(unused(latest.files)).toEqual([]);
      rmSync(root, { recursive: true, force: true });
    });

    it('a field added to the selection becomes a nullable column under propagate and changes nothing under report; a checkpoint every two versions is what a reader reads when the commits before it are gone', async () => {
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
        const t = await read(join(root, policy, 'items'));
        if (policy === 'propagate') {
          expect(t.schema.map(([n]) => n)).toEqual(['_key', 'id', 'title', 'score', 'tags', 'owner']);
          expect(t.rows.filter((r) => r.owner !== null).map((r) => [r._key, r.owner])).toEqual(
            ['r0000', 'r0001', 'r0002'].map((k) => [k, '{"name":"Ada"}']),
          );
        } else expect(t.schema.map(([n]) => n)).toEqual(['_key', 'id', 'title', 'score', 'tags']);
        expect(t.schema.find(([n]) => n === 'score')?.[1]).toBe('double');
        expect(t.rows).toHaveLength(30);
      }

      // Version 1 made a checkpoint: a copy of the table without commits 0 and 1 reads the same.
      const table = join(root, 'propagate', 'items');
      const copy = join(root, 'copy');
      cpSync(table, copy, { recursive: true });
      for (const v of [0, 1]) rmSync(join(copy, '_delta_log', `${String(v).padStart(20, '0')}.json`));
      expect(existsSync(join(copy, '_delta_log', '_last_checkpoint'))).toBe(true);
      const [whole, fromCheckpoint] = await Promise.all([read(table), read(copy)]);
      expect(fromCheckpoint.rows).toEqual(whole.rows);
      expect(fromCheckpoint.schema).toEqual(whole.schema);
      expect(fromCheckpoint.version).toBe(1);
      expect(await driveDelta({ op: 'snapshot', store: { folder: root }, table: 'copy' })).toMatchObject({
        ok: true,
        result: {
          version: 1,
          files: whole.files.length,
          txns: { 'tenant-integrations/acme': Date.parse('2026-11-28T10:00:00.000Z') },
        },
      });
      rmSync(root, { recursive: true, force: true });
    });

    it('a run killed 30 days ago leaves its staged pages: the next run removes them; the log keeps the newest checkpoint older than its retention and everything after; small files are laid out again together', async () => {
      const root = mkdtempSync(join(tmpdir(), 'ti-delta-house-'));
      const store = { folder: root };
      const table = join(root, 'items');
      const options = { checkpointInterval: 2 };
      expect(
        await run(store, runAt('2026-10-01T09:00:00.000Z'), [changesOf('created', 0, 100)], { options }),
      ).toMatchObject({ ok: true });
      // Killed after staging its pages: its staging stays behind.
      const killed = runAt('2026-10-02T09:00:00.000Z');
      expect(
        await run(store, killed, [changesOf('updated', 0, 5, { title: 'lost' })], {
          stageOnly: true,
          options,
        }),
      ).toMatchObject({ ok: true, result: 'staged' });
      expect(readdirSync(join(table, '_staging'))).toEqual([killed]);
      // Nine small runs (a record changed each), each adding a file of one row: the ninth lays the eight before it out
      // again as one file.
      for (let i = 0; i < 9; i++)
        expect(
          await run(
            store,
            runAt(new Date(Date.parse('2026-10-03T00:00:00.000Z') + i * 3_600_000).toISOString()),
            [changesOf('updated', 10 * i, 10 * i + 1, { title: `run ${i}` })],
            { options },
          ),
        ).toMatchObject({ ok: true });
      const mid = await read(table);
      expect(mid.rows).toHaveLength(100);
      expect(mid.rows.filter((r) => String(r.title).startsWith('run ')).map((r) => r._key)).toHaveLength(9);
      expect(mid.files).toHaveLength(10 + 1 + 1);
      expect(existsSync(join(table, '_staging', killed))).toBe(true); // not yet past retention (7 days)

      // Thirty days on: the killed run's staging goes, the log's old commits before the newest old checkpoint too.
      const later = runAt('2026-11-05T09:00:00.000Z');
      expect(
        await run(store, later, [changesOf('updated', 50, 51, { title: 'later' })], {
          options,
          clockOffsetSeconds: 40 * 24 * 3600,
        }),
      ).toMatchObject({ ok: true });
      expect(existsSync(join(table, '_staging', killed))).toBe(false);
      const entries = readdirSync(join(table, '_delta_log'));
      const kept = entries.filter((e) => /^\d{20}\.json$/.test(e)).map((e) => Number(e.slice(0, 20)));
      expect(Math.min(...kept)).toBeGreaterThan(0);
      const final = await read(table);
      expect(final.rows).toHaveLength(100);
      expect(final.rows.find((r) => r._key === 'r0050')?.title).toBe('later');
      rmSync(root, { recursive: true, force: true });
    });

    it('with DELTA_DELETION_VECTORS=false a table is protocol 1 / 2, and a change writes again only the files holding a changed key', async () => {
      const root = mkdtempSync(join(tmpdir(), 'ti-delta-plain-'));
      const store = { folder: root };
      const table = join(root, 'items');
      const options = { deletionVectors: false };
      expect(
        await run(store, runAt('2026-11-28T09:00:00.000Z'), [changesOf('created', 0, 100)], { options }),
      ).toMatchObject({ ok: true });
      const protocol = logEntry(table, 0).find((a) => a.protocol)?.protocol;
      expect(protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 2 });
      const before = await read(table);
      expect(before.files).toHaveLength(10);
      expect(
        await run(
          store,
          runAt('2026-11-28T10:00:00.000Z'),
          [changesOf('updated', 5, 6, { title: 'one' }), changesOf('deleted', 55, 56)],
          { options },
        ),
      ).toMatchObject({ ok: true });
      const after = await read(table);
      expect(after.rows).toHaveLength(99);
      expect(after.rows.find((r) => r._key === 'r0005')?.title).toBe('one');
      // Two files held the two keys: each written again without them, the other eight the same files.
      expect(before.files.filter((f) => !after.files.includes(f))).toHaveLength(2);
      expect(logEntry(table, 1).some((a) => a.add?.deletionVector)).toBe(false);
      rmSync(root, { recursive: true, force: true });
    });
  });

  describe('on Blob Storage (Azurite)', () => {
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
      const changes = await read('az://race/lake/items_changes', { azuriteBlob });
      expect([changes.version, changes.rows.length]).toEqual([1, 40]);
      const items = await read('az://race/lake/items', { azuriteBlob });
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
}
