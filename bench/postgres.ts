import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom } from 'pg-copy-streams';
import type { Change } from '../shared/sync/changes';
import { fingerprint, changeIdOf, recordJson } from '../shared/sync/fingerprint';
import { PostgresSink } from '../shared/sinks';
import { startPostgres } from '../tools/postgres-server';

/**
 * Rows/s into PostgreSQL through the postgres sink (pages of 100 records, the sync's page size: an upsert, the
 * deletes and the checkpoint row in one transaction per page) beside a plain `COPY` of the same rows into a plain
 * table with the same columns — the limit — in the same run, on a server started for it. Goal: ≥ 0.5 of COPY.
 */
const ROWS = 100_000;
const PAGE = Number(process.env.BENCH_PAGE ?? 100);

function records(n: number): Change[] {
  const out: Change[] = [];
  for (let i = 0; i < n; i++) {
    const id = `ctl-${String(i).padStart(7, '0')}`;
    const record = {
      id,
      title: `Control ${i}: access reviews are performed quarterly`,
      status: ['implemented', 'planned', 'not-applicable'][i % 3],
      owner: { name: `Owner ${i % 97}`, email: `owner${i % 97}@example.com` },
      updatedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      tags: ['iso27001', `area-${i % 12}`],
      score: (i * 37) % 100,
    };
    const json = recordJson(record);
    out.push({
      changeId: changeIdOf(fingerprint('controls', id, json)),
      stream: 'controls',
      kind: 'created',
      id,
      record,
    });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function postgresBench(): Promise<Record<string, unknown>> {
  const pg = await startPostgres();
  const rows = records(ROWS);
  const ours: number[] = [];
  const copy: number[] = [];
  try {
    for (let round_ = 0; round_ < 5; round_++) {
      // Ours: a fresh schema, the pages one after the other as a sync delivers them.
      const schema = `bench_${round_}`;
      const sink = new PostgresSink(() => pg.pool, { schema });
      const runId = randomUUID();
      let t = process.hrtime.bigint();
      for (let p = 0; p * PAGE < rows.length; p++)
        await sink.write({
          tenant: 'bench',
          runId,
          stream: 'controls',
          page: p + 1,
          changes: rows.slice(p * PAGE, (p + 1) * PAGE),
        });
      ours.push(Number(process.hrtime.bigint() - t) / 1e6);

      // The limit: COPY of the same rows into a plain table of the same columns.
      await pg.query(
        `CREATE TABLE plain_${round_} (id text, record jsonb, content_hash text, synced_at timestamptz, run_id text)`,
      );
      const now = new Date().toISOString();
      const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
      const client = await pg.pool.connect();
      try {
        t = process.hrtime.bigint();
        const lines = (function* () {
          for (const c of rows)
            yield `${c.id}\t${esc(JSON.stringify(c.record))}\t${c.changeId}\t${now}\t${runId}\n`;
        })();
        await pipeline(Readable.from(lines), client.query(copyFrom(`COPY plain_${round_} FROM STDIN`)));
        copy.push(Number(process.hrtime.bigint() - t) / 1e6);
      } finally {
        client.release();
      }
      const [{ n }] = await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".controls`);
      if (n !== ROWS) throw new Error(`the sink wrote ${n} rows, not ${ROWS}`);
    }
  } finally {
    await pg.stop();
  }
  const oursRate = ROWS / (median(ours) / 1000);
  const copyRate = ROWS / (median(copy) / 1000);
  console.error(
    `postgres: sink ${Math.round(oursRate)} rows/s, COPY ${Math.round(copyRate)} rows/s (medians of 5)`,
  );
  return {
    bench: 'postgres',
    rows: ROWS,
    pageSize: PAGE,
    sinkRowsPerSecond: Math.round(oursRate),
    copyRowsPerSecond: Math.round(copyRate),
    ratio: round(oursRate / copyRate),
    ratioGoal: '>= 0.5',
  };
}
