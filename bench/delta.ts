import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Change } from '../shared/changes';
import { systemClock } from '../shared/clock';
import { DeltaSink, FolderStore, readSnapshot } from '../shared/sinks/delta';
import { DirectorySink } from '../shared/sinks/dir';
import type { ChangeSink } from '../shared/sinks/types';
import { records } from './postgres';

/**
 * The delta sink into a folder, as a sync drives it (pages of 100 staged, then the stream's end commits both tables),
 * beside the Parquet dir sink (`dir:` with SYNC_FORMAT=parquet, one file of the run's changes) given the same pages in
 * the same round, their order swapped each round: a first load of 100 k records, its time beside the dir sink's (the
 * goal: at least 0.8 of its speed). Then 0.1 % of the records changed (100, spread over the key space) and 1 %: what
 * the commit wrote — new data files and the log entry — as a share of the current table's bytes (the goal for 0.1 %:
 * at most 5 %), with deletion vectors (the default) and without (DELTA_DELETION_VECTORS=false).
 */
const ROWS = 100_000;
const PAGE = 100;
const ROUNDS = 5;
const FIELDS = ['id', 'title', 'status', 'owner', 'updatedAt', 'tags', 'score'];
/** Records changed by the later runs: 0.1 % and 1 %. */
const CHANGED = [100, 1_000];

const runId = (hour: number) => `2026-11-28T${String(hour).padStart(2, '0')}-00-00-000Z-bench0000`;

async function pass(sink: ChangeSink, run: string, rows: Change[]): Promise<void> {
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
    { fields: FIELDS },
  );
}

const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

const deltaSink = (folder: string, deletionVectors: boolean) =>
  new DeltaSink(new FolderStore(folder), {
    schemaChanges: 'report',
    rejected: 'fail',
    retentionHours: 168,
    checkpointInterval: 10,
    deletionVectors,
    clock: systemClock,
  });

/** What a run's commit wrote to the current table, as a share of the table's data before it. */
async function written(lake: string, before: Awaited<ReturnType<typeof readSnapshot>>): Promise<number> {
  const store = new FolderStore(lake);
  const after = await readSnapshot(store, 'controls');
  const tableBytes = [...before.files.values()].reduce((n, f) => n + f.size, 0);
  const newFiles = [...after.files.values()]
    .filter((f) => !before.files.has(f.path))
    .reduce((n, f) => n + f.size, 0);
  const log = join(lake, 'controls', '_delta_log');
  const entries = (await readdir(log)).filter((f) => /^\d{20}\.(json|checkpoint\.parquet)$/.test(f));
  const newest = entries.filter((f) => Number(f.slice(0, 20)) > before.version);
  let logBytes = 0;
  for (const f of newest) logBytes += (await stat(join(log, f))).size;
  return (newFiles + logBytes) / tableBytes;
}

export async function deltaBench(): Promise<Record<string, unknown>> {
  const first = records(ROWS);
  const rounds: Array<Record<string, number>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const dir = await mkdtemp(join(tmpdir(), 'ti-bench-delta-'));
    try {
      const timed = async (name: 'dir' | 'delta') => {
        const t = process.hrtime.bigint();
        await pass(
          name === 'dir'
            ? new DirectorySink(join(dir, 'out'), 'parquet')
            : deltaSink(join(dir, 'lake'), true),
          runId(1),
          first,
        );
        return ms(t);
      };
      // Each first in turn: the machine's state (caches, the collector) favours neither.
      const [a, b] = r % 2 ? (['delta', 'dir'] as const) : (['dir', 'delta'] as const);
      const times = { [a]: await timed(a), [b]: await timed(b) } as Record<'dir' | 'delta', number>;
      const result: Record<string, number> = {
        dirMs: round(times.dir, 0),
        deltaMs: round(times.delta, 0),
        loadRatio: round(times.dir / times.delta),
      };
      for (const vectors of [true, false]) {
        const lake = join(dir, vectors ? 'lake' : 'plain-lake');
        if (!vectors) await pass(deltaSink(lake, false), runId(1), first);
        for (const [n, count] of CHANGED.entries()) {
          const step = Math.floor(ROWS / count);
          const changed = records(ROWS, n + 1)
            .filter((_, i) => i % step === 0)
            .slice(0, count);
          const before = await readSnapshot(new FolderStore(lake), 'controls');
          await pass(deltaSink(lake, vectors), runId(2 + n), changed);
          result[`${vectors ? 'vectors' : 'rewrite'}Written${count}`] = round(await written(lake, before), 4);
        }
      }
      rounds.push(result);
      console.error(`round ${r + 1}: ${JSON.stringify(result)}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const med = (k: string) => median(rounds.map((x) => x[k]));
  return {
    bench: 'delta',
    rows: ROWS,
    loadRatioToParquetDir: med('loadRatio'),
    ...Object.fromEntries(
      CHANGED.map((c) => [
        `changed${c}`,
        {
          shareWrittenWithVectors: med(`vectorsWritten${c}`),
          shareWrittenWithout: med(`rewriteWritten${c}`),
        },
      ]),
    ),
    rounds,
  };
}
