import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { from as copyFrom } from 'pg-copy-streams';
import { change, recordJsonOf, type Change } from '../shared/changes';
import { changeIdFor, recordJson } from '../shared/sync/fingerprint';
import { BATCH_ROWS, PostgresSink } from '../shared/sinks';
import { startPostgres } from '../tools/postgres-server';

/**
 * Rows/s into PostgreSQL through the postgres sink as a sync drives it (pages of 100 records written with `hold`,
 * stored in groups of POSTGRES_BATCH_ROWS: one transaction with a COPY of the new records and the pages' checkpoint
 * rows, then the pass's flush) beside a plain `COPY` of the same rows (the same JSON text, made once per record as the sync makes it) into a plain table with the same columns —
 * the limit — in the same round, on a server started for it. Goal: ≥ 0.8 of COPY (median of the rounds' ratios),
 * the worst round ≥ 0.7. Beside it, what each step buys: one group per page (as each page was once stored), and
 * the same records all changed (the upsert a second pass takes).
 */
const ROWS = 100_000;
const PAGE = 100;
const ROUNDS = 7;

export function records(n: number, version = 0): Change[] {
  const out: Change[] = [];
  for (let i = 0; i < n; i++) {
    const id = `ctl-${String(i).padStart(7, '0')}`;
    const record = {
      id,
      title: `Control ${i}: access reviews are performed quarterly`,
      status: ['implemented', 'planned', 'not-applicable'][(i + version) % 3],
      owner: { name: `Owner ${i % 97}`, email: `owner${i % 97}@example.com` },
      updatedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000 + version).toISOString(),
      tags: ['iso27001', `area-${i % 12}`],
      score: (i * 37) % 100,
    };
    // With its JSON, made once for its change id, as the sync's changes come to a sink.
    const json = recordJson(record);
    const changeId = changeIdFor('controls', id, json);
    out.push(change('controls', version ? 'updated' : 'created', id, changeId, record, json));
  }
  return out;
}

/** The pages of a pass through the sink as the sync writes them: held, then flushed at the end of the listing. */
async function pass(sink: PostgresSink, runId: string, rows: Change[]): Promise<void> {
  for (let p = 0; p * PAGE < rows.length; p++)
    await sink.write(
      {
        tenant: 'bench',
        runId,
        stream: 'controls',
        page: p + 1,
        changes: rows.slice(p * PAGE, (p + 1) * PAGE),
      },
      { hold: true },
    );
  await sink.flush(runId, 'controls');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

/**
 * Milliseconds of one step, after a checkpoint and a garbage collection: no step pays for the dirty pages or the
 * garbage of the one before.
 */
let timed: (step: () => Promise<void>) => Promise<number>;

export async function postgresBench(): Promise<Record<string, unknown>> {
  // The bench holds 200 k changes: a full collection of that heap landing in one timed step and not in the other
  // swung a round's ratio by ±0.15 (worst rounds 0.66–0.74 with medians 0.86–0.93), so each step starts collected.
  setFlagsFromString('--expose-gc');
  const collectGarbage = runInNewContext('gc') as () => void;
  const pg = await startPostgres();
  timed = async (step) => {
    await pg.query('CHECKPOINT');
    collectGarbage();
    const t = process.hrtime.bigint();
    await step();
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const rows = records(ROWS);
  const changed = records(ROWS, 1);
  const ms: Record<'copy' | 'keyed' | 'sink' | 'perPage' | 'updates', number[]> = {
    keyed: [],
    copy: [],
    sink: [],
    perPage: [],
    updates: [],
  };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const runId = randomUUID();
      const now = new Date().toISOString();
      // The limit: COPY of the same rows into a plain table of the same columns (`keyed`: with the sink's
      // primary key, which any design that upserts by id pays for).
      const copy = async (table: string, keyed: boolean) => {
        await pg.query(
          keyed
            ? `CREATE TABLE ${table} (id text PRIMARY KEY, record jsonb NOT NULL, content_hash text NOT NULL, synced_at timestamptz NOT NULL, run_id text NOT NULL, deleted_at timestamptz)`
            : `CREATE TABLE ${table} (id text, record jsonb, content_hash text, synced_at timestamptz, run_id text)`,
        );
        const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
        const client = await pg.pool.connect();
        try {
          return await timed(async () => {
            const lines = (function* () {
              for (const c of rows)
                yield `${c.id}\t${esc(recordJsonOf(c))}\t${c.changeId}\t${now}\t${runId}\n`;
            })();
            await pipeline(
              Readable.from(lines),
              client.query(
                copyFrom(`COPY ${table} (id, record, content_hash, synced_at, run_id) FROM STDIN`),
              ),
            );
          });
        } finally {
          client.release();
        }
      };
      // Ours: a fresh schema, a first pass as a sync delivers it; then every record changed. The order of the two
      // alternates, so a server that speeds up or slows down over a round favours neither.
      const sink = new PostgresSink(() => pg.pool, { schema: `bench_${r}` });
      if (r % 2) ms.copy.push(await copy(`plain_${r}`, false));
      ms.sink.push(await timed(() => pass(sink, runId, rows)));
      if (!(r % 2)) ms.copy.push(await copy(`plain_${r}`, false));
      ms.keyed.push(await copy(`keyed_${r}`, true));
      ms.updates.push(await timed(() => pass(sink, randomUUID(), changed)));
      const perPage = new PostgresSink(() => pg.pool, { schema: `page_${r}`, batchRows: PAGE });
      ms.perPage.push(await timed(() => pass(perPage, runId, rows)));
      for (const schema of [`bench_${r}`, `page_${r}`]) {
        const [{ n }] = await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".controls`);
        if (n !== ROWS) throw new Error(`the sink wrote ${n} rows to ${schema}, not ${ROWS}`);
      }
      const [{ u }] = await pg.query<{ u: number }>(
        `SELECT count(*)::int AS u FROM "bench_${r}".controls WHERE record->>'updatedAt' LIKE '%.001Z'`,
      );
      if (u !== ROWS) throw new Error(`the second pass changed ${u} rows, not ${ROWS}`);
      // A server that keeps every round's tables slows down round by round (its buffers fill).
      await pg.query(
        `DROP SCHEMA bench_${r} CASCADE; DROP SCHEMA page_${r} CASCADE; DROP TABLE plain_${r}, keyed_${r}`,
      );
    }
  } finally {
    await pg.stop();
  }
  // Each round's ratio against the COPY of the same round: the server's pace drifts between rounds.
  const ratios = (k: keyof typeof ms) => ms[k].map((m, i) => ms.copy[i] / m);
  const rate = (k: keyof typeof ms) => Math.round(ROWS / (median(ms[k]) / 1000));
  const sinkRatios = ratios('sink');
  console.error(
    `postgres: sink ${rate('sink')} rows/s, COPY ${rate('copy')} rows/s; ratio ${round(median(sinkRatios))} (worst ${round(Math.min(...sinkRatios))}); COPY with the primary key ${round(median(ratios('keyed')))}, one group per page ${round(median(ratios('perPage')))}, every record changed ${round(median(ratios('updates')))} (medians of ${ROUNDS})`,
  );
  return {
    bench: 'postgres',
    rows: ROWS,
    pageSize: PAGE,
    batchRows: BATCH_ROWS,
    rounds: ROUNDS,
    copyRowsPerSecond: rate('copy'),
    sinkRowsPerSecond: rate('sink'),
    ratio: round(median(sinkRatios)),
    worstRatio: round(Math.min(...sinkRatios)),
    roundRatios: sinkRatios.map((x) => round(x)),
    ratioGoal: '>= 0.8, worst round >= 0.7',
    copyWithPrimaryKey: { rowsPerSecond: rate('keyed'), ratio: round(median(ratios('keyed'))) },
    onePagePerGroup: { rowsPerSecond: rate('perPage'), ratio: round(median(ratios('perPage'))) },
    everyRecordChanged: { rowsPerSecond: rate('updates'), ratio: round(median(ratios('updates'))) },
  };
}
