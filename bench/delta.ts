import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Change } from '../shared/changes';
import { systemClock } from '../shared/clock';
import { writeParquet } from '../shared/formats/parquet';
import { DeltaSink, FolderStore, readSnapshot } from '../shared/sinks/delta';
import { records } from './postgres';

/**
 * The delta sink into a folder, as a sync drives it (pages of 100 staged, then the stream's end commits both tables):
 * a first load of 100 k records beside the plainest way to write the same two tables' data — one `writeParquet` of
 * the records (key column first) and one of the changes (id, kind, key, the record's JSON, run), the limit, in the
 * same round — and then 10 records changed, and 500 (0.5 %): how many of the current table's
 * files and bytes each commit rewrote (records laid out by a hash of the key), and its time beside the first load's.
 */
const ROWS = 100_000;
const PAGE = 100;
const ROUNDS = 3;
/** Records changed by the second pass: a handful, and 0.5 %. */
const CHANGED = [10, 500];

const runId = (hour: number) => `2026-11-28T${String(hour).padStart(2, '0')}-00-00-000Z-bench0000`;

async function pass(sink: DeltaSink, run: string, rows: Change[]): Promise<void> {
  const pages: number[] = [];
  for (let p = 0; p * PAGE < rows.length; p++) {
    await sink.write({
      tenant: 'bench',
      runId: run,
      stream: 'controls',
      page: p + 1,
      changes: rows.slice(p * PAGE, (p + 1) * PAGE),
    });
    pages.push(p + 1);
  }
  const created = rows.filter((r) => r.kind === 'created').length;
  await sink.endStream(
    'bench',
    run,
    'controls',
    pages,
    { read: rows.length, created, updated: rows.length - created, deleted: 0, unchanged: 0 },
    {
      fields: ['id', 'title', 'status', 'owner', 'updatedAt', 'tags', 'score'],
    },
  );
}

const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function deltaBench(): Promise<Record<string, unknown>> {
  const first = records(ROWS);
  const rounds: Array<Record<string, number>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const dir = await mkdtemp(join(tmpdir(), 'ti-bench-delta-'));
    try {
      // The limit: the two tables' data as two Parquet files, written plainly.
      let t = process.hrtime.bigint();
      await writeParquet(
        async function* () {
          yield first;
        },
        join(dir, 'plain.parquet'),
        {
          leading: [{ name: '_key', kind: 'STRING', required: true, value: (c: Change) => c.id }],
          recordOf: (c) => c.record,
        },
      );
      await writeParquet(
        async function* () {
          yield first;
        },
        join(dir, 'plain-changes.parquet'),
        {
          leading: [
            { name: 'change_id', kind: 'STRING', required: true, value: (c: Change) => c.changeId },
            { name: 'kind', kind: 'STRING', required: true, value: (c: Change) => c.kind },
            { name: 'key', kind: 'STRING', required: true, value: (c: Change) => c.id },
            { name: 'record', kind: 'STRING', value: (c: Change) => JSON.stringify(c.record) },
            { name: 'run_id', kind: 'STRING', required: true, value: () => runId(1) },
          ],
          recordOf: () => undefined,
          columns: new Map(),
        },
      );
      const plainMs = ms(t);

      const store = new FolderStore(join(dir, 'lake'));
      const sink = new DeltaSink(store, {
        schemaChanges: 'report',
        rejected: 'fail',
        retentionHours: 168,
        checkpointInterval: 10,
        clock: systemClock,
      });
      t = process.hrtime.bigint();
      await pass(sink, runId(1), first);
      const loadMs = ms(t);

      const round_: Record<string, number> = {
        plainMs: round(plainMs, 0),
        loadMs: round(loadMs, 0),
        loadRatio: round(plainMs / loadMs),
      };
      // Then records changed, spread over the key space (each pass a run of its own).
      for (const [n, count] of CHANGED.entries()) {
        const step = Math.floor(ROWS / count);
        const changed = records(ROWS, n + 1)
          .filter((_, i) => i % step === 0)
          .slice(0, count);
        const before = await readSnapshot(store, 'controls');
        t = process.hrtime.bigint();
        await pass(sink, runId(2 + n), changed);
        const updateMs = ms(t);
        const after = await readSnapshot(store, 'controls');
        const rewritten = [...after.files.values()].filter((f) => !before.files.has(f.path));
        const tableBytes = [...after.files.values()].reduce((x, f) => x + f.size, 0);
        round_.files = after.files.size;
        round_[`filesRewritten${count}`] = rewritten.length;
        round_[`bytesRewrittenShare${count}`] = round(
          rewritten.reduce((x, f) => x + f.size, 0) / tableBytes,
          3,
        );
        round_[`update${count}OverLoad`] = round(updateMs / loadMs, 3);
        round_.tableBytesOverPlain = round(tableBytes / (await stat(join(dir, 'plain.parquet'))).size);
      }
      rounds.push(round_);
      console.error(`round ${r + 1}: ${JSON.stringify(rounds.at(-1))}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const med = (k: string) => median(rounds.map((x) => x[k]));
  return {
    bench: 'delta',
    rows: ROWS,
    loadRatio: med('loadRatio'),
    ...Object.fromEntries(
      CHANGED.flatMap((c) => [
        [
          `changed${c}`,
          {
            files: `${med(`filesRewritten${c}`)} of ${med('files')}`,
            bytesShare: med(`bytesRewrittenShare${c}`),
            timeOverLoad: med(`update${c}OverLoad`),
          },
        ],
      ]),
    ),
    rounds,
  };
}
