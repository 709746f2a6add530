import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalFileSecretStore } from '../../shared/secrets';
import { ROW_GROUP } from '../../shared/formats/parquet';
import { runCli } from '../helpers/cli';
import { eventually } from '../helpers/host';
import { sandboxFixture, type SandboxFixture } from '../helpers/sandbox';
import { sourceRecords } from '../helpers/source';
import { stackFixture } from '../helpers/stack';

/**
 * SYNC_FORMAT=parquet: the files the dir sink (CLI) and the blob sink (local host, Azurite) write are read back
 * with an independent reader (hyparquet, in its own process) and compared with the sandbox's data.
 */
jest.setTimeout(180_000);

const READER = resolve(__dirname, '../helpers/read-parquet.mjs');
interface Parquet {
  rowGroups: number;
  codec: string;
  columns: Array<{ name: string; type: string; convertedType: string | null }>;
  rows: Array<Record<string, unknown>>;
}
const read = (file: string) =>
  JSON.parse(execFileSync(process.execPath, [READER, file], { maxBuffer: 256 << 20 }).toString()) as Parquet;

/**
 * A Parquet row's fields back as the record they came from (empty columns dropped). The reader parses JSON columns
 * itself: a value that comes back as text where the record had an object was stored as the JSON of its JSON text.
 */
function recordOf(row: Record<string, unknown>, columns: Parquet['columns'], changes = true) {
  const out: Record<string, unknown> = { id: row.id };
  for (const c of columns) {
    if (
      (changes && ['change_id', 'kind', 'content_hash'].includes(c.name)) ||
      row[c.name] === null ||
      row[c.name] === undefined
    )
      continue;
    out[c.name] = row[c.name];
  }
  return out;
}

let sb: SandboxFixture;
let dir: string;
let env: Record<string, string>;
beforeAll(async () => {
  sb = await sandboxFixture({ records: ROW_GROUP + 500 });
  dir = mkdtempSync(join(tmpdir(), 'ti-parquet-'));
  const secretsFile = join(dir, 'secrets.json');
  await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
  env = { ...sb.settings, LOCAL_SECRETS_FILE: secretsFile, SYNC_FORMAT: 'parquet', AzureWebJobsStorage: '' };
});
afterAll(async () => {
  await sb?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Parquet from the dir sink', () => {
  it('one file per stream and run, snappy, bounded row groups, equal to the source; a second run holds only the changes', async () => {
    const sync = async () => {
      // Full passes: the second run's file must hold the deletion too.
      const r = await runCli(
        ['sync', '--streams', 'controls,users', '--sink', 'dir:./out', '--full-pass', '--json'],
        {
          env,
          cwd: dir,
        },
      );
      expect([r.code, r.code ? r.stdout + r.stderr : '']).toEqual([0, '']);
      return JSON.parse(r.stdout) as { runId: string };
    };
    const first = await sync();
    expect(readdirSync(join(dir, 'out', first.runId)).sort()).toEqual([
      'controls.parquet',
      'manifest.json',
      'users.parquet',
    ]);
    for (const stream of ['controls', 'users']) {
      const file = read(join(dir, 'out', first.runId, `${stream}.parquet`));
      expect(file.codec).toBe('SNAPPY');
      expect(file.rowGroups).toBe(Math.ceil((ROW_GROUP + 500) / ROW_GROUP)); // memory stays flat: bounded groups
      expect(file.columns.slice(0, 4).map((c) => c.name)).toEqual([
        'change_id',
        'kind',
        'id',
        'content_hash',
      ]);
      const source = await sourceRecords(env, stream);
      expect(file.rows.length).toBe(source.size);
      for (const row of file.rows) {
        expect(row.kind).toBe('created');
        expect(row.content_hash).toBe(row.change_id);
        expect(recordOf(row, file.columns)).toEqual(source.get(row.id as string));
      }
    }
    const mutated = (
      await sb.hook('data/mutate', { collection: 'controls', creates: 2, updates: 3, deletes: 1 })
    ).body as { created: string[]; updated: string[]; deleted: string[] };
    const second = await sync();
    const changes = read(join(dir, 'out', second.runId, 'controls.parquet'));
    const byKind = (k: string) =>
      changes.rows
        .filter((r) => r.kind === k)
        .map((r) => r.id)
        .sort();
    expect(byKind('created')).toEqual([...mutated.created].sort());
    expect(byKind('updated')).toEqual([...mutated.updated].sort());
    expect(byKind('deleted')).toEqual([...mutated.deleted].sort());
    const source = await sourceRecords(env, 'controls');
    for (const row of changes.rows.filter((r) => r.kind !== 'deleted'))
      expect(recordOf(row, changes.columns)).toEqual(source.get(row.id as string));
    expect(changes.rows.find((r) => r.kind === 'deleted')?.content_hash).toBeNull();
    expect(read(join(dir, 'out', second.runId, 'users.parquet')).rows).toEqual([]);
  });

  it('a record UTF-8 cannot hold fails the stream naming it; with quarantine it is set aside beside the file, the rest written', async () => {
    // A folder and state of its own: the earlier test's state would make every record "unchanged".
    const own = mkdtempSync(join(dir, 'poison-'));
    const secretsFile = join(own, 'secrets.json');
    await new LocalFileSecretStore(secretsFile).set('tenant-client-secret', sb.clientSecret);
    const poisonEnv = { ...env, LOCAL_SECRETS_FILE: secretsFile };
    await sb.hook('data/set', {
      collection: 'kpis',
      id: 'kpi-0000007',
      fields: { name: 'Broken \ud800 KPI' },
    });
    try {
      const sync = (extra: Record<string, string> = {}) =>
        runCli(['sync', '--streams', 'kpis', '--sink', 'dir:./out', '--json'], {
          env: { ...poisonEnv, ...extra },
          cwd: own,
        });
      const failing = await sync();
      expect(failing.code).toBe(1);
      expect(JSON.parse(failing.stdout).streams.kpis.error).toMatch(
        /Parquet.*record "kpi-0000007": a field holds a lone UTF-16 surrogate.*SYNC_REJECTED_RECORDS=quarantine/,
      );
      const set = await sync({ SYNC_REJECTED_RECORDS: 'quarantine' });
      expect([set.code, set.code ? set.stdout : '']).toEqual([0, '']);
      const summary = JSON.parse(set.stdout) as { runId: string; streams: { kpis: { rejected?: number } } };
      expect(summary.streams.kpis.rejected).toBe(1);
      const out = join(own, 'out', summary.runId);
      const file = read(join(out, 'kpis.parquet'));
      expect(file.rows).toHaveLength(ROW_GROUP + 500 - 1);
      expect(file.rows.some((r) => r.id === 'kpi-0000007')).toBe(false);
      const aside = readFileSync(join(out, 'kpis.quarantine.ndjson'), 'utf8').trim().split('\n');
      expect(aside.map((l) => JSON.parse(l) as { id: string; reason: string; record: string })).toEqual([
        {
          id: 'kpi-0000007',
          reason: expect.stringMatching(/lone UTF-16 surrogate/),
          record: expect.stringContaining('Broken \\ud800 KPI'),
        },
      ]);
    } finally {
      await sb.hook('reset');
    }
  });
});

describe('Parquet exports', () => {
  it('`tenant-integrations export --format parquet`: one file per stream, equal to the source; --gzip is refused', async () => {
    const r = await runCli(['export', '--streams', 'controls', '--format', 'parquet', '--out', './export'], {
      env,
      cwd: dir,
    });
    expect(r.code).toBe(0);
    const file = read(join(dir, 'export', 'controls.parquet'));
    expect(file.codec).toBe('SNAPPY');
    expect(file.rowGroups).toBe(2);
    const source = await sourceRecords(env, 'controls');
    expect(file.rows.length).toBe(source.size);
    for (const row of file.rows)
      expect(recordOf(row, file.columns, false)).toEqual(source.get(row.id as string));
    const gz = await runCli(['export', '--format', 'parquet', '--gzip', '--out', './x'], { env, cwd: dir });
    expect(gz.code).toBe(2);
    expect(gz.stderr).toContain('--gzip does not apply to parquet');
  });
});

describe('Parquet on the local host: the blob sink and the export webhook', () => {
  it('adds {stream}.parquet beside the NDJSON in the sync container, and exports Parquet through POST /api/exports', async () => {
    const stack = await stackFixture({
      sandbox: { records: 120 },
      env: { SYNC_SINKS: 'blob', SYNC_FORMAT: 'parquet', SYNC_STREAMS: 'controls' },
    });
    try {
      expect((await stack.json('manage/sync', { method: 'POST' })).status).toBe(202);
      const run = await eventually(async () => {
        const [latest] = (await stack.json('manage/runs?kind=sync')).body.runs;
        return latest?.outcome === 'succeeded' && latest;
      }, 'the run');
      const container = stack.blobService().getContainerClient('sync-changes');
      const names: string[] = [];
      for await (const b of container.listBlobsFlat({ prefix: `acme/${run.id}/` }))
        names.push(b.name.split('/').pop() as string);
      expect(names.sort()).toEqual(['controls.ndjson.gz', 'controls.parquet', 'manifest.json']);
      const file = join(dir, 'from-blob.parquet');
      await container.getBlobClient(`acme/${run.id}/controls.parquet`).downloadToFile(file);
      const parquet = read(file);
      const source = await sourceRecords(
        { ...stack.sb.settings, LOCAL_SECRETS_FILE: stack.secretsFile, AzureWebJobsStorage: '' },
        'controls',
      );
      expect(parquet.rows.length).toBe(120);
      for (const row of parquet.rows)
        expect(recordOf(row, parquet.columns)).toEqual(source.get(row.id as string));
    } finally {
      await stack.close();
    }
  });
});

describe('an export written as its pages arrive', () => {
  const PARQUET = resolve(__dirname, '../../dist/shared/formats/parquet/index.js');
  /**
   * ParquetOfRecords in a process of its own (its writer is an ES module, which jest cannot load; needs the build):
   * the pages as they arrive, then `finish`. Answers the rows written and the folder's files after the last page.
   */
  const writeAsPagesArrive = (file: string, pages: unknown[][]) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [
          '-e',
          `const { ParquetOfRecords } = require(${JSON.stringify(PARQUET)});
           const { readdirSync } = require('node:fs');
           const { dirname } = require('node:path');
           const [file, pages] = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
           (async () => {
             const w = new ParquetOfRecords(file);
             for (const p of pages) await w.page(p);
             const files = readdirSync(dirname(file)).sort();
             process.stdout.write(JSON.stringify({ rows: await w.finish(), files }));
           })().catch((e) => { console.error(e.message); process.exit(1); });`,
        ],
        { input: JSON.stringify([file, pages]), maxBuffer: 64 << 20 },
      ).toString(),
    ) as { rows: number; files: string[] };

  /** Rows in pages of 100, as a collection would answer them. */
  const pagesOf = <T>(rows: T[]): T[][] => {
    const pages: T[][] = [];
    for (let i = 0; i < rows.length; i += 100) pages.push(rows.slice(i, i + 100));
    return pages;
  };

  /** Rows with distinct and repeated texts, numbers, booleans, objects, lists and empty fields: three row groups. */
  const mixed = () =>
    Array.from({ length: ROW_GROUP * 2 + 300 }, (_, i) => ({
      id: `r${i}`,
      // Texts beyond ASCII: UTF-8 orders U+E000 before 😀 (U+1F600), JavaScript's strings the other way round.
      status: ['open', 'done', 'late', '\uE000 private use', '😀 smile'][i % 5],
      title: i % 9 ? `${['', '\uE000', '😀'][i % 3]}Title ${i} — ünïcode 😀` : null,
      n: i / 4,
      ok: i % 3 === 0,
      tags: i % 5 ? ['a', `t${i % 7}`] : null,
      owner: i % 4 ? { name: `p${i % 11}`, since: 2020 + (i % 6), note: 'line\nbreak "quoted"' } : undefined,
    }));

  /**
   * Writes `rows` as their pages arrive and, in a process of its own, the writer given strings and objects with the
   * schema it documents (`kinds`: UTF8, JSON, DOUBLE, BOOLEAN) in the same row groups — so only how the values reach it
   * differs. Answers our file's columns annotated JSON, and whether the two files are the same bytes.
   */
  const sameAsWriter = (rows: Array<Record<string, unknown>>, kinds: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-same-'));
    try {
      const ours = join(dir, 'ours.parquet');
      const theirs = join(dir, 'theirs.parquet');
      writeAsPagesArrive(ours, pagesOf(rows));
      execFileSync(
        process.execPath,
        [
          '-e',
          `const { ParquetWriter, fileWriter } = require('hyparquet-writer');
           const [theirs, rows, groupSize, kinds] = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
           const schema = [{ name: 'root', num_children: Object.keys(kinds).length }, ...Object.entries(kinds).map(([name, k]) => ({
             name,
             type: k === 'DOUBLE' ? 'DOUBLE' : k === 'BOOLEAN' ? 'BOOLEAN' : 'BYTE_ARRAY',
             ...(k === 'UTF8' || k === 'JSON' ? { converted_type: k } : {}),
             repetition_type: 'OPTIONAL',
           }))];
           const w = new ParquetWriter({ writer: fileWriter(theirs), schema, codec: 'SNAPPY' });
           for (let i = 0; i < rows.length; i += groupSize) {
             const group = rows.slice(i, i + groupSize);
             w.write({ rowGroupSize: groupSize, columnData: Object.keys(kinds).map((name) => ({ name, data: group.map((r) => r[name] ?? null) })) });
           }
           w.finish();`,
        ],
        { input: JSON.stringify([theirs, rows, ROW_GROUP, kinds]), maxBuffer: 256 << 20 },
      );
      return {
        json: read(ours)
          .columns.filter((c) => c.convertedType === 'JSON')
          .map((c) => c.name),
        same: readFileSync(ours).equals(readFileSync(theirs)),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('the file is byte for byte the one hyparquet-writer writes from the values themselves (text and JSON encoded by us, the footer saying JSON)', () => {
    const kinds = {
      id: 'UTF8',
      status: 'UTF8',
      title: 'UTF8',
      n: 'DOUBLE',
      ok: 'BOOLEAN',
      tags: 'JSON',
      owner: 'JSON',
    };
    expect(sameAsWriter(mixed(), kinds)).toEqual({ json: ['tags', 'owner'], same: true });
  });

  it('and so with more than fourteen row groups, and a group whose column takes more than one page (a page index)', () => {
    // The footer's entries are made as groups are written (shared/formats/parquet/hyparquet-adapter.ts); a list of more than
    // fourteen is written with its length apart, and a chunk of several pages gets an offset index at the end.
    const rows = Array.from({ length: ROW_GROUP * 15 + 10 }, (_, i) => ({
      id: `r${i}`,
      n: i,
      // ~700 bytes in each row of the second group: its chunk is more than a page (1 MiB) long.
      blob:
        i >= ROW_GROUP && i < ROW_GROUP * 2 ? `${i}`.padEnd(700, String.fromCharCode(97 + (i % 26))) : null,
      meta: { at: i % 3 ? `2026-11-${String(1 + (i % 28)).padStart(2, '0')}T00:00:00Z` : null, seq: i },
    }));
    expect(sameAsWriter(rows, { id: 'UTF8', n: 'DOUBLE', blob: 'UTF8', meta: 'JSON' })).toEqual({
      json: ['meta'],
      same: true,
    });
  });

  it("a row group's write lets other work run between its columns (a page's answer arriving meanwhile is read then, not after the whole group)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-turns-'));
    try {
      const out = execFileSync(
        process.execPath,
        [
          '-e',
          `const { ParquetOfRecords } = require(${JSON.stringify(PARQUET)});
           const [file, rows] = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
           (async () => {
             const w = new ParquetOfRecords(file);
             for (let i = 0; i < rows.length - 100; i += 100) await w.page(rows.slice(i, i + 100));
             // The last page completes the row group, whose write starts with it: count the turns of the event
             // loop other work gets before that page is taken in.
             let turns = 0;
             let done = false;
             const other = () => { if (!done) { turns++; setImmediate(other); } };
             setImmediate(other);
             await w.page(rows.slice(rows.length - 100));
             done = true;
             await w.finish();
             process.stdout.write(String(turns));
           })().catch((e) => { console.error(e.message); process.exit(1); });`,
        ],
        { input: JSON.stringify([join(dir, 'items.parquet'), mixed().slice(0, ROW_GROUP)]) },
      ).toString();
      // Seven columns: a turn before each.
      expect(Number(out)).toBeGreaterThanOrEqual(7);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a text column all distinct in its first row group and repeating after it (written without a dictionary from then on) reads back as written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-distinct-'));
    try {
      const file = join(dir, 'items.parquet');
      const rows = Array.from({ length: ROW_GROUP * 3 }, (_, i) => ({
        id: `r${i}`,
        code: i < ROW_GROUP ? `c${i}` : ['x', 'y', null][i % 3],
      }));
      expect(writeAsPagesArrive(file, pagesOf(rows)).rows).toBe(rows.length);
      expect(read(file).rows).toEqual(rows);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('records whose fields come in other orders, or lack some, read back each value in its own column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-order-'));
    try {
      const file = join(dir, 'items.parquet');
      // Most records in one order, some reversed, some rotated and some without fields — in every row group.
      const rows = Array.from({ length: ROW_GROUP + 700 }, (_, i) => {
        const r: Record<string, unknown> = {
          id: `r${i}`,
          n: i,
          title: `t${i % 13}`,
          ok: i % 2 === 0,
          tags: [i % 3],
        };
        const keys = Object.keys(r);
        const order =
          i % 7 === 3 ? [...keys].reverse() : i % 11 === 5 ? [...keys.slice(2), ...keys.slice(0, 2)] : keys;
        return Object.fromEntries(order.filter((k) => !(i % 5 === 4 && k === 'title')).map((k) => [k, r[k]]));
      });
      expect(writeAsPagesArrive(file, pagesOf(rows)).rows).toBe(rows.length);
      const back = read(file);
      expect(back.columns.map((c) => c.name)).toEqual(['id', 'n', 'title', 'ok', 'tags']);
      const columns = ['id', 'n', 'title', 'ok', 'tags'];
      expect(back.rows).toEqual(rows.map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null]))));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('records of one shape: the file is done with the last page, no page kept anywhere else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-early-'));
    try {
      const file = join(dir, 'items.parquet');
      const pages = [
        [
          { id: 'a', n: 1, ok: true },
          { id: 'b', n: 2, ok: false },
        ],
        [{ id: 'c', n: 3, ok: true }],
      ];
      expect(writeAsPagesArrive(file, pages)).toEqual({ rows: 3, files: ['items.parquet.early'] });
      const back = read(file);
      expect(back.columns.map((c) => [c.name, c.type])).toEqual([
        ['id', 'BYTE_ARRAY'],
        ['n', 'DOUBLE'],
        ['ok', 'BOOLEAN'],
      ]);
      expect(back.rows).toEqual(pages.flat());
      expect(readdirSync(dir)).toEqual(['items.parquet']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a page that adds a field or changes a type, after more than a row group: every row with the columns of all pages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ti-parquet-early-'));
    try {
      const file = join(dir, 'items.parquet');
      // Two and a half row groups of one shape — text, numbers, booleans, objects, lists, empty fields — then a page
      // where `n` is text and `extra` appears, then one of the first shape again.
      const early = Array.from({ length: ROW_GROUP * 2 + 500 }, (_, i) => ({
        id: `r${i}`,
        n: i / 4,
        ok: i % 3 === 0,
        tags: i % 5 ? ['a', `t${i % 7}`] : null,
        owner: i % 4 ? { name: `p${i % 11}`, since: 2020 + (i % 6) } : undefined,
      }));
      const pages: Array<Array<Record<string, unknown>>> = pagesOf<Record<string, unknown>>(early);
      pages.push(
        [{ id: 'x1', n: 'many', extra: true }],
        [{ id: 'x2', n: 7, ok: false, owner: { name: 'q' } }],
      );
      const { rows, files } = writeAsPagesArrive(file, JSON.parse(JSON.stringify(pages)));
      expect(rows).toBe(early.length + 2);
      expect(files).toEqual(['items.parquet.early', 'items.parquet.late.ndjson']);
      const back = read(file);
      expect(back.columns.map((c) => [c.name, c.type, c.convertedType])).toEqual([
        ['id', 'BYTE_ARRAY', 'UTF8'],
        ['n', 'BYTE_ARRAY', 'JSON'],
        ['ok', 'BOOLEAN', null],
        ['tags', 'BYTE_ARRAY', 'JSON'],
        ['owner', 'BYTE_ARRAY', 'JSON'],
        ['extra', 'BOOLEAN', null],
      ]);
      // The reader parses JSON columns: each value back as the record had it, an absent field empty.
      const columns = ['id', 'n', 'ok', 'tags', 'owner', 'extra'];
      const want = pages.flat().map((r) => Object.fromEntries(columns.map((c) => [c, r[c] ?? null])));
      expect(back.rows).toEqual(want);
      expect(back.rowGroups).toBe(Math.ceil(rows / ROW_GROUP));
      expect(readdirSync(dir)).toEqual(['items.parquet']); // nothing of the first attempt left
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
