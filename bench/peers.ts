import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalFileSecretStore } from '../shared/secrets';
import { startPostgraphileTenant, type PostgraphileTenant } from '../tools/postgraphile-tenant';
import { median, round, startSandboxProcess } from './sync';
import { timedCommand, writeRssHook } from './timed-process';

/**
 * `npm run bench -- peers`: our `sync --full --sink dir:` against a Meltano Singer SDK tap and a dlt pipeline
 * (bench/peers/*.py, each as its user writes it, sending the document its user would: the same record fields,
 * `edges { node }`, `pageInfo { hasNextPage endCursor }`), page 100, reading one table of PostGraphile v4 (its
 * defaults) over PostgreSQL, then the sandbox's controls. Whole processes, interleaved (each round rotates who goes
 * first), ROUNDS rounds; per run: wall time spawn to exit, the peak RSS of its largest process, the server's CPU time
 * (PostGraphile's process and PostgreSQL's, backends included; the sandbox's process), and on PostGraphile the
 * server's own count of the records it served, which must be the table. BENCH_PEERS_ROWS (default "100000,300000")
 * names PostGraphile's table sizes, BENCH_PEERS_SANDBOX_ROWS (default 100000; 0: none) the sandbox's.
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
}

/** A run's time, its largest process's peak RSS (ours: the CLI and the sync it starts again) and its stdout. */
async function timed(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  const r = await timedCommand(command, args, env, cwd);
  return { ms: r.ms, peakMb: Math.max(...r.rssMbs), out: r.out };
}

interface Tenant {
  name: string;
  rows: number;
  stream: string;
  /** The document a peer's user would write: the same record fields ours reads, `edges`, `hasNextPage`. */
  query: string;
  /** The records' JSON schema properties (the Singer tap's schema). */
  properties: Record<string, unknown>;
  settings: Record<string, string>;
  graphql: string;
  authUrl: string;
  tenant: string;
  clientId: string;
  clientSecret: string;
  /** The processes whose CPU (with their children's) is the server's. */
  serverPids: number[];
  /** The server's own count of records served since the last call, where it keeps one. */
  served?: () => Promise<number>;
  stop: () => Promise<void>;
}

const text = { type: ['string', 'null'] };
const person = { type: ['object', 'null'], properties: { id: text, name: text, email: text } };

async function postgraphileTenant(rows: number): Promise<Tenant> {
  const t: PostgraphileTenant = await startPostgraphileTenant({ readings: rows, countMarker: '"sensor":' });
  return {
    name: 'PostGraphile',
    rows,
    stream: 'allReadings',
    query:
      'query Readings($first: Int, $after: Cursor) { allReadings(first: $first, after: $after) { edges { node { id sensor value updatedAt } } pageInfo { hasNextPage endCursor } } }',
    properties: { id: text, sensor: text, value: { type: ['number', 'null'] }, updatedAt: text },
    settings: t.settings,
    graphql: `${t.baseUrl}/graphql`,
    authUrl: t.authUrl,
    tenant: t.tenant,
    clientId: t.clientId,
    clientSecret: t.clientSecret,
    serverPids: [t.pids.postgraphile, t.pids.postgres].filter((p): p is number => typeof p === 'number'),
    served: async () => (await t.stats({ reset: true })).served,
    stop: () => t.stop(),
  };
}

async function sandboxTenant(rows: number): Promise<Tenant> {
  const sb = await startSandboxProcess(rows);
  return {
    name: 'sandbox',
    rows,
    stream: 'controls',
    query:
      'query Controls($first: Int, $after: String) { controls(first: $first, after: $after) { edges { node { id reference title description framework status owner { id name email } tags updatedAt } } pageInfo { hasNextPage endCursor } } }',
    properties: {
      id: text,
      reference: text,
      title: text,
      description: text,
      framework: text,
      status: text,
      owner: person,
      tags: { type: ['array', 'null'], items: text },
      updatedAt: text,
    },
    settings: {
      TENANT_NAME: sb.info.tenant,
      TENANT_BASE_URL: sb.info.baseUrl,
      TENANT_AUTH_URL: sb.info.authUrl,
      TENANT_CLIENT_ID: sb.info.clientId,
    },
    graphql: `${sb.info.baseUrl}/graphql`,
    ...sb.info,
    serverPids: sb.pid ? [sb.pid] : [],
    stop: async () => {
      sb.stop();
    },
  };
}

async function token(t: Tenant): Promise<string> {
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

async function runsOn(t: Tenant): Promise<Record<string, unknown>> {
  const { rows, stream } = t;
  const dir = await mkdtemp(join(tmpdir(), 'ti-bench-peers-'));
  try {
    writeRssHook(dir);
    await writeFile(join(dir, 'rss.py'), PY_RSS);
    const secrets = join(dir, 'secrets.json');
    await new LocalFileSecretStore(secrets).set('tenant-client-secret', t.clientSecret);
    // The same records as the peers deliver: personal data kept as sent, as theirs is.
    const ours = { ...process.env, ...t.settings, LOCAL_SECRETS_FILE: secrets, SYNC_PERSONAL_DATA: 'keep' };
    const cli = join(ROOT, 'bin', 'tenant-integrations.js');
    // The catalog as a user has it: discovered, the one stream chosen.
    await timed(
      process.execPath,
      ['--require', join(dir, 'rss.js'), cli, 'discover', '--out', join(dir, 'streams.json')],
      ours,
      dir,
    );
    const at = join(dir, 'run'); // each run's own folder, removed after it
    const config = async () => {
      await mkdir(at, { recursive: true });
      const file = join(at, 'config.json');
      await writeFile(
        file,
        JSON.stringify({
          api_url: t.graphql,
          token: await token(t),
          page_size: PAGE,
          connection: stream,
          query: t.query,
          properties: t.properties,
        }),
        { mode: 0o600 },
      );
      return file;
    };
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
            SYNC_STREAMS: stream,
            SYNC_STATE_DIR: join(at, 'state'),
          },
          dir,
        );
        const summary = JSON.parse(r.out) as {
          ok: boolean;
          streams: Record<string, { created: number }>;
        };
        if (!summary.ok || summary.streams[stream].created !== rows)
          throw new Error(`our sync created ${summary.streams[stream].created} of ${rows}`);
        return r;
      },
      singer: async () => {
        const r = await timed(
          PYTHON,
          [join(dir, 'rss.py'), join(SCRIPTS, 'tap.py'), '--config', await config()],
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
            join(SCRIPTS, 'dlt_pipeline.py'),
            await config(),
            join(at, 'out'),
            join(at, 'work'),
          ],
          { ...process.env, RUNTIME__LOG_LEVEL: 'WARNING' },
          dir,
        );
        const loaded = spawnSync('sh', [
          '-c',
          `zcat -f ${join(at, 'out', 'tenant', 'records')}/*.jsonl* | wc -l`,
        ]).stdout.toString();
        if (Number(loaded) !== rows) throw new Error(`dlt loaded ${loaded.trim()} of ${rows} records`);
        return r;
      },
    };
    const names = Object.keys(contenders);
    const runs: Record<string, Run[]> = Object.fromEntries(names.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(round + i) % names.length];
        await t.served?.();
        const before = cpuSeconds(t.serverPids);
        const r = await contenders[name]();
        const serverCpuS = cpuSeconds(t.serverPids) - before;
        const served = t.served ? await t.served() : undefined;
        // Every record once: the server's own count of what it served is the table.
        if (served !== undefined && served !== rows)
          throw new Error(`${name}: the server served ${served} records of a table of ${rows}`);
        runs[name].push({ ms: r.ms, peakMb: r.peakMb, serverCpuS });
        console.error(
          `peers ${t.name} ${rows}: round ${round + 1} ${name} ${(r.ms / 1000).toFixed(2)} s, peak ${r.peakMb.toFixed(1)} MB, server CPU ${serverCpuS.toFixed(2)} s`,
        );
        await rm(at, { recursive: true, force: true });
      }
    }
    const med = (name: string, f: (r: Run) => number) => median(runs[name].map(f));
    const ratio = (peer: string) => round(median(runs.ours.map((r, i) => runs[peer][i].ms / r.ms)));
    const cpuPerRecord = (peer: string) =>
      round(med('ours', (r) => r.serverCpuS) / med(peer, (r) => r.serverCpuS));
    return {
      tenant: t.name,
      rows,
      seconds: Object.fromEntries(names.map((k) => [k, round(med(k, (r) => r.ms) / 1000)])),
      peakMb: Object.fromEntries(names.map((k) => [k, round(Math.max(...runs[k].map((r) => r.peakMb)), 1)])),
      serverCpuSeconds: Object.fromEntries(names.map((k) => [k, round(med(k, (r) => r.serverCpuS))])),
      speedOverSinger: ratio('singer'),
      speedOverDlt: ratio('dlt'),
      serverCpuPerRecordVsSinger: cpuPerRecord('singer'),
      serverCpuPerRecordVsDlt: cpuPerRecord('dlt'),
      servedEqualsTable: t.served ? true : 'not counted (the sandbox keeps no count of records served)',
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await t.stop();
  }
}

export async function peersBench(): Promise<Record<string, unknown>> {
  ensureVenv();
  const sizes = (process.env.BENCH_PEERS_ROWS ?? '100000,300000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0); // '' or 0: the sandbox alone
  const sandboxRows = Number(process.env.BENCH_PEERS_SANDBOX_ROWS ?? 100_000);
  const results = [];
  for (const rows of sizes) results.push(await runsOn(await postgraphileTenant(rows)));
  if (sandboxRows > 0) results.push(await runsOn(await sandboxTenant(sandboxRows)));
  return {
    bench: 'peers',
    tenant: `PostGraphile 4 (defaults) over PostgreSQL (table reading), then the sandbox (controls); page ${PAGE}, ${ROUNDS} interleaved rounds`,
    peers: PEER_PACKAGES.join(', '),
    goals:
      'PostGraphile: speed >= 2 at 100 000 and >= 1.5 at 300 000 over each peer; server CPU per record <= 0.5 of each; our peak <= 80 MB at 300 000; the sandbox: the lead held',
    results,
  };
}
