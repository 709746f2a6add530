import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

/**
 * Our sync's records/s over a raw paged `fetch` loop of the same pages from the same sandbox (goal ≥ 0.9),
 * and the sync process's peak RSS at 100 k and 1 M records (goal ≤ 200 MB and flat). The sandbox runs in its
 * own process; every measurement is a fresh process, interleaved so drift hits both alike.
 */
const DIST = resolve(__dirname, '..');
const run = promisify(execFile);

export async function startSandboxProcess(records: number) {
  const child = spawn(
    process.execPath,
    [resolve(DIST, '..', 'bin', 'tenant-integrations.js'), 'sandbox', '--records', String(records)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const line = await new Promise<string>((ok, fail) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      if (buf.includes('\n')) ok(buf.slice(0, buf.indexOf('\n')));
    });
    child.once('exit', (code) => fail(new Error(`sandbox exited with ${code}`)));
  });
  const info = JSON.parse(line) as {
    baseUrl: string;
    authUrl: string;
    tenant: string;
    clientId: string;
    clientSecret: string;
  };
  return { info, stop: () => child.kill('SIGTERM') };
}

async function measure(
  mode: 'raw' | 'sync',
  sandbox: Awaited<ReturnType<typeof startSandboxProcess>>['info'],
) {
  const { stdout } = await run(
    process.execPath,
    [resolve(DIST, 'bench', 'sync-child.js'), JSON.stringify({ mode, stream: 'controls', ...sandbox })],
    { maxBuffer: 1 << 20, timeout: 30 * 60_000 },
  );
  return JSON.parse(stdout) as { records: number; ms: number; peakRssMb: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function syncBench(): Promise<Record<string, unknown>> {
  const small = await startSandboxProcess(100_000);
  const rawRate: number[] = [];
  const syncRate: number[] = [];
  const rss100k: number[] = [];
  const rawRss100k: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const r = await measure('raw', small.info);
      const s = await measure('sync', small.info);
      rawRate.push(r.records / (r.ms / 1000));
      syncRate.push(s.records / (s.ms / 1000));
      rss100k.push(s.peakRssMb);
      rawRss100k.push(r.peakRssMb);
    }
  } finally {
    small.stop();
  }
  const large = await startSandboxProcess(1_000_000);
  let big: { records: number; ms: number; peakRssMb: number };
  let bigRaw: { records: number; ms: number; peakRssMb: number };
  try {
    bigRaw = await measure('raw', large.info);
    big = await measure('sync', large.info);
  } finally {
    large.stop();
  }
  const rate = median(syncRate) / median(rawRate);
  return {
    bench: 'sync',
    stream: 'controls (page size 100, first run: every record a change)',
    rawRecordsPerSecond: Math.round(median(rawRate)),
    syncRecordsPerSecond: Math.round(median(syncRate)),
    ratio: round(rate),
    ratioGoal: '>= 0.9',
    ratio1M: round(big.records / big.ms / (bigRaw.records / bigRaw.ms)),
    peakRssMb100k: round(median(rss100k), 1),
    peakRssMb1M: round(big.peakRssMb, 1),
    rawPeakRssMb100k: round(median(rawRss100k), 1),
    rawPeakRssMb1M: round(bigRaw.peakRssMb, 1),
    records1M: big.records,
    rssGrowth1Mvs100k: round(big.peakRssMb / median(rss100k)),
    rssGoal: '<= 200 MB and flat',
  };
}
