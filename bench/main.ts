import { coldstartBench } from './coldstart';
import { deltaBench } from './delta';
import { discoverBench } from './discover';
import { exportBench } from './export';
import { importBench } from './import';
import { importBodyBench } from './import-body';
import { peersBench } from './peers';
import { personalBench } from './personal';
import { postgresBench } from './postgres';
import { syncBench } from './sync';
import { postgraphileSyncBench } from './sync-postgraphile';
import { tokenBench } from './token';

/** `npm run bench -- <name>`: each bench measures its baseline in the same run; JSON on the last line. */
const BENCHES: Record<string, () => Promise<Record<string, unknown>>> = {
  token: tokenBench,
  coldstart: coldstartBench,
  discover: discoverBench,
  // BENCH_SYNC_TENANT=postgraphile: the same ratio against a real server nobody here wrote (bench/sync-postgraphile.ts).
  sync: () => (process.env.BENCH_SYNC_TENANT === 'postgraphile' ? postgraphileSyncBench() : syncBench()),
  export: exportBench,
  import: importBench,
  'import-body': importBodyBench,
  postgres: postgresBench,
  delta: deltaBench,
  personal: personalBench,
  peers: peersBench,
};

async function main(): Promise<number> {
  const names = process.argv.slice(2);
  const unknown = names.filter((n) => !BENCHES[n]);
  if (!names.length || unknown.length) {
    console.error(
      `usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> …${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`,
    );
    return 2;
  }
  const results = [];
  for (const name of names) results.push(await BENCHES[name]());
  console.log(JSON.stringify(results.length === 1 ? results[0] : results));
  return 0;
}

main().then((code) => process.exit(code));
