import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccessLayer } from '../shared/access';
import { discover } from '../shared/catalog';
import { startPostgraphileTenant } from '../tools/postgraphile-tenant';
import { sandboxConfig } from './sandbox-config';
import { measure, median, rate, round } from './sync';

/**
 * `BENCH_SYNC_TENANT=postgraphile npm run bench -- sync`: our sync's records/s over a plain reader of the same pages
 * (kept-alive node:http, one connection, each page parsed and counted) against PostGraphile v4 over PostgreSQL —
 * the stream as `discover` proposes it (a Relay connection, `edges`, a first-page `totalCount`), a table of
 * BENCH_PG_ROWS rows (default 100 000). Goal ≥ 0.9. Each measurement a fresh process, interleaved, the median of the
 * rounds' own ratios: the server (PostGraphile and PostgreSQL on the same two cores) is most of the time in both.
 */
const ROUNDS = 7;

export async function postgraphileSyncBench(): Promise<Record<string, unknown>> {
  const rows = Number(process.env.BENCH_PG_ROWS ?? 100_000);
  const tenant = await startPostgraphileTenant({ readings: rows });
  const dir = await mkdtemp(join(tmpdir(), 'ti-bench-pgl-'));
  try {
    const info = {
      baseUrl: tenant.baseUrl,
      authUrl: tenant.authUrl,
      tenant: tenant.tenant,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
    };
    const access = createAccessLayer(await sandboxConfig(info, dir));
    const found = await discover(access.graphql);
    const definition = found.streams.find((p) => p.stream.name === 'allReadings')?.stream;
    if (!definition) throw new Error('discover proposed no allReadings stream');
    const rounds: Array<{ raw: number; sync: number; ratio: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Alternating which goes first, so a warm server favours neither.
      const pair =
        i % 2 === 0
          ? [await measure('raw', info, { definition }), await measure('sync', info, { definition })]
          : [
              ...[
                await measure('sync', info, { definition }),
                await measure('raw', info, { definition }),
              ].reverse(),
            ];
      const [raw, sync] = pair;
      if (raw.records !== rows || sync.records !== rows)
        throw new Error(`read ${raw.records} (plain) and ${sync.records} (sync) of ${rows} rows`);
      rounds.push({ raw: rate(raw), sync: rate(sync), ratio: rate(sync) / rate(raw) });
    }
    return {
      bench: 'sync',
      tenant: `PostGraphile 4 (defaults) over PostgreSQL, ${rows} rows, stream allReadings as discovered (cursor, edges, page size ${definition.pageSize})`,
      rawRecordsPerSecond: Math.round(median(rounds.map((r) => r.raw))),
      syncRecordsPerSecond: Math.round(median(rounds.map((r) => r.sync))),
      ratio: round(median(rounds.map((r) => r.ratio))),
      ratioGoal: '>= 0.9',
      roundRatios: rounds.map((r) => round(r.ratio)),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await tenant.stop();
  }
}
