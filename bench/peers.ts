import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalFileSecretStore } from '../shared/secrets';
import { startPostgraphileTenant, type PostgraphileTenant } from '../tools/postgraphile-tenant';
import { median, round } from './sync';

/**
 * `npm run bench -- peers`: our `sync --full --sink dir:` against a Meltano Singer SDK tap and a dlt pipeline
 * (bench/peers/*.py, each as its user writes it, sending the document its user would: edges, pageInfo { hasNextPage
 * endCursor }), all reading one table of PostGraphile v4 (defaults) over PostgreSQL, page 100. Whole processes,
 * interleaved (each round rotates who goes first), ROUNDS rounds; per run: wall time spawn to exit, the peak RSS of
 * its largest process, the server's CPU time (PostGraphile's process and PostgreSQL's, backends included), and the
 * server's own count of the records it served. BENCH_PEERS_ROWS (default "100000,300000") names the table sizes.
 *
 * The peers come from PyPI into .ci/peers-venv (made here when missing: PEER_PACKAGES).
 */
const ROUNDS = 5;
const PAGE = 100;
const ROOT = resolve(__dirname, '..', '..');
const VENV = join(ROOT, '.ci', 'peers-venv');
const PYTHON = join(VENV, 'bin', 'python');
const SCRIPTS = join(ROOT, 'bench', 'peers');
export const PEER_PACKAGES = ['singer-sdk==0.54.9', 'dlt==1.31.0', 'requests==2.34.2'];

/** Python run with its own peak RSS (ru_maxrss, KiB) on stderr as it exits, as the Node processes print theirs. */
const PY_RSS = `import atexit, resource, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nRSS %d\\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")`;
const NODE_RSS = `process.on('exit', () => require('fs').writeSync(2, '\\nRSS ' + process.resourceUsage().maxRSS + '\\n'));`;

function ensureVenv() {
  const ok = () =>
    existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import singer_sdk, dlt, requests']).status === 0;
  if (ok()) return;
  console.error(`bench peers: installing ${PEER_PACKAGES.join(' ')} into ${VENV}`);
  for (const [cmd, args] of [
    ['python3', ['-m', 'venv', VENV]],
    [join(VENV, 'bin', 'pip'), ['install', '-q', ...PEER_PACKAGES]],
  ] as const) {
    const r = spawnSync(cmd, args, { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: is python3 with venv installed?`);
  }
}

/** CPU seconds (user + system, exited children included) of a process and its children, from /proc. */
function cpuSeconds(pids: number[]): number {
  const ticks = 100; // USER_HZ on Linux
  const stats = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const text = readFileSync(`/proc/${d}/stat`, 'utf8');
        const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
        return [
          {
            pid: Number(d),
            ppid: Number(f[1]),
            cpu: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]),
          },
        ];
      } catch {
        return []; // gone meanwhile
      }
    });
  const of = new Set(pids);
  return stats.filter((s) => of.has(s.pid) || of.has(s.ppid)).reduce((n, s) => n + s.cpu, 0) / ticks;
}

interface Run {
  ms: number;
  peakMb: number;
  serverCpuS: number;
  served: number;
}

function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  return new Promise<{ ms: number; peakMb: number; out: string }>((done, fail) => {
    const started = process.hrtime.bigint();
    const child = spawn(cmd, args, { env, cwd });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', fail);
    child.once('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const peaks = [...err.matchAll(/RSS (\d+)/g)].map((m) => Number(m[1]));
      if (code !== 0 || !peaks.length)
        return fail(new Error(`${args.join(' ')} exited ${code}: ${err.slice(-800)}`));
      done({ ms, peakMb: Math.max(...peaks) / 1024, out });
    });
  });
}

async function token(t: PostgraphileTenant): Promise<string> {
  const r = await fetch(`${t.authUrl}/realms/${t.tenant}/protocol/openid-connect/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: t.clientId,
      client_secret: t.clientSecret,
    }),
  });
  return ((await r.json()) as { access_token: string }).access_token;
}

async function runsAt(rows: number): Promise<Record<string, unknown>> {
  const t = await startPostgraphileTenant({ readings: rows, countMarker: '"sensor":' });
  const dir = await mkdtemp(join(tmpdir(), 'ti-bench-peers-'));
  try {
    await writeFile(join(dir, 'rss.js'), NODE_RSS);
    await writeFile(join(dir, 'rss.py'), PY_RSS);
    const secrets = join(dir, 'secrets.json');
    await new LocalFileSecretStore(secrets).set('tenant-client-secret', t.clientSecret);
    const ours = { ...process.env, ...t.settings, LOCAL_SECRETS_FILE: secrets };
    const cli = join(ROOT, 'bin', 'tenant-integrations.js');
    // The catalog as a user has it: discovered, the one stream chosen.
    await timed(
      process.execPath,
      ['--require', join(dir, 'rss.js'), cli, 'discover', '--out', join(dir, 'streams.json')],
      ours,
      dir,
    );
    const graphql = `${t.baseUrl}/graphql`;
    const at = join(dir, 'run'); // each run's own folder, removed after it
    const contenders: Record<string, () => Promise<{ ms: number; peakMb: number }>> = {
      ours: async () => {
        const r = await timed(
          process.execPath,
          [
            '--require',
            join(dir, 'rss.js'),
            cli,
            'sync',
            '--full',
            '--sink',
            `dir:${join(at, 'out')}`,
            '--json',
          ],
          {
            ...ours,
            SYNC_STREAMS_FILE: join(dir, 'streams.json'),
            SYNC_STREAMS: 'allReadings',
            SYNC_STATE_DIR: join(at, 'state'),
          },
          dir,
        );
        const summary = JSON.parse(r.out) as { ok: boolean; streams: { allReadings: { created: number } } };
        if (!summary.ok || summary.streams.allReadings.created !== rows)
          throw new Error(`our sync created ${summary.streams.allReadings.created} of ${rows}`);
        return r;
      },
      singer: async () => {
        await mkdir(at, { recursive: true });
        await writeFile(
          join(at, 'config.json'),
          JSON.stringify({ api_url: graphql, token: await token(t), page_size: PAGE }),
          { mode: 0o600 },
        );
        const r = await timed(
          PYTHON,
          [join(dir, 'rss.py'), join(SCRIPTS, 'tap_readings.py'), '--config', join(at, 'config.json')],
          process.env,
          dir,
        );
        const records = r.out.split('\n').filter((l) => l.startsWith('{"type":"RECORD"')).length;
        if (records !== rows) throw new Error(`the Singer tap wrote ${records} of ${rows} records`);
        return r;
      },
      dlt: async () => {
        const r = await timed(
          PYTHON,
          [
            join(dir, 'rss.py'),
            join(SCRIPTS, 'dlt_readings.py'),
            graphql,
            join(at, 'out'),
            join(at, 'work'),
            String(PAGE),
          ],
          { ...process.env, PEER_TOKEN: await token(t), RUNTIME__LOG_LEVEL: 'WARNING' },
          dir,
        );
        const loaded = spawnSync('sh', [
          '-c',
          `zcat -f ${join(at, 'out', 'tenant', 'readings')}/*.jsonl* | wc -l`,
        ]).stdout.toString();
        if (Number(loaded) !== rows) throw new Error(`dlt loaded ${loaded.trim()} of ${rows} records`);
        return r;
      },
    };
    const names = Object.keys(contenders);
    const runs: Record<string, Run[]> = Object.fromEntries(names.map((k) => [k, []]));
    const server = [t.pids.postgraphile, t.pids.postgres].filter((p): p is number => typeof p === 'number');
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(round + i) % names.length];
        await t.stats({ reset: true });
        const before = cpuSeconds(server);
        const r = await contenders[name]();
        const serverCpuS = cpuSeconds(server) - before;
        const { served } = await t.stats();
        // Every record once: the server's own count of what it served is the table.
        if (served !== rows)
          throw new Error(`${name}: the server served ${served} records of a table of ${rows}`);
        runs[name].push({ ms: r.ms, peakMb: r.peakMb, serverCpuS, served });
        console.error(
          `peers ${rows}: round ${round + 1} ${name} ${(r.ms / 1000).toFixed(2)} s, peak ${r.peakMb.toFixed(1)} MB, server CPU ${serverCpuS.toFixed(2)} s`,
        );
        await rm(at, { recursive: true, force: true });
      }
    }
    const med = (name: string, f: (r: Run) => number) => median(runs[name].map(f));
    const ratio = (peer: string) => round(median(runs.ours.map((r, i) => runs[peer][i].ms / r.ms)));
    const cpuPerRecord = (peer: string) =>
      round(med('ours', (r) => r.serverCpuS) / med(peer, (r) => r.serverCpuS));
    return {
      rows,
      seconds: Object.fromEntries(names.map((k) => [k, round(med(k, (r) => r.ms) / 1000)])),
      peakMb: Object.fromEntries(names.map((k) => [k, round(Math.max(...runs[k].map((r) => r.peakMb)), 1)])),
      serverCpuSeconds: Object.fromEntries(names.map((k) => [k, round(med(k, (r) => r.serverCpuS))])),
      speedOverSinger: ratio('singer'),
      speedOverDlt: ratio('dlt'),
      serverCpuPerRecordVsSinger: cpuPerRecord('singer'),
      serverCpuPerRecordVsDlt: cpuPerRecord('dlt'),
      servedEqualsTable: true,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await t.stop();
  }
}

export async function peersBench(): Promise<Record<string, unknown>> {
  ensureVenv();
  const sizes = (process.env.BENCH_PEERS_ROWS ?? '100000,300000').split(',').map(Number);
  const results = [];
  for (const rows of sizes) results.push(await runsAt(rows));
  return {
    bench: 'peers',
    tenant: `PostGraphile 4 (defaults) over PostgreSQL, table reading, page ${PAGE}, ${ROUNDS} interleaved rounds`,
    peers: PEER_PACKAGES.join(', '),
    goals:
      'speed >= 2 at 100 000 and >= 1.5 at 300 000 over each peer; server CPU per record <= 0.5 of each; our peak <= 80 MB at 300 000',
    results,
  };
}
