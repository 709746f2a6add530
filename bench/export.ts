import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { startAzurite } from '../cli/azurite';
import { startSandboxProcess } from './sync';

/**
 * The export's memory does not grow with its size: peak RSS of exports of 10 k, 100 k and 300 k records to
 * Blob Storage (Azurite), each a fresh process running the export activity's code, beside the same figure for
 * a raw paged `fetch` loop over the same pages (the baseline: what Node itself takes to read that much).
 */
const DIST = resolve(__dirname, '..');
const run = promisify(execFile);

interface Measured {
  records: number;
  ms: number;
  peakRssMb: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

async function child(script: string, args: object): Promise<Measured> {
  const { stdout } = await run(process.execPath, [resolve(DIST, 'bench', script), JSON.stringify(args)], {
    maxBuffer: 1 << 20,
    timeout: 20 * 60_000,
  });
  return JSON.parse(stdout) as Measured;
}

export async function exportBench(): Promise<Record<string, unknown>> {
  const azurite = await startAzurite();
  const sizes = [10_000, 100_000, 300_000];
  const exported: Record<number, Measured[]> = {};
  const parquet: Record<number, Measured[]> = {};
  const raw: Record<number, Measured[]> = {};
  try {
    for (const records of sizes) {
      const sandbox = await startSandboxProcess(records);
      try {
        // Interleaved, so drift hits all alike, and each round starts with the next of the three, so none always runs
        // first against the sandbox (whose speed moves within a round as well as across rounds); eleven at 100 k (where
        // the throughput is compared: a median of seven moved ±0.05 between runs of one build), one at 300 k.
        const exportAs = (into: Record<number, Measured[]>, format: 'csv' | 'parquet') => async () => {
          (into[records] ??= []).push(
            await child('export-child.js', {
              ...sandbox.info,
              storage: azurite.connectionString,
              stream: 'controls',
              format,
              gzip: format === 'csv',
            }),
          );
        };
        const runs: Array<() => Promise<void>> = [
          async () => {
            (raw[records] ??= []).push(
              await child('sync-child.js', { mode: 'raw', stream: 'controls', ...sandbox.info }),
            );
          },
          exportAs(exported, 'csv'),
          exportAs(parquet, 'parquet'),
        ];
        for (let i = 0; i < (records === 100_000 ? 11 : records > 100_000 ? 1 : 3); i++)
          for (let k = 0; k < runs.length; k++) await runs[(i + k) % runs.length]();
      } finally {
        sandbox.stop();
      }
    }
  } finally {
    await azurite.stop();
  }
  const rss = (m: Record<number, Measured[]>, n: number) => median(m[n].map((r) => r.peakRssMb));
  const rate = (m: Record<number, Measured[]>, n: number) =>
    median(m[n].map((r) => r.records / (r.ms / 1000)));
  const ratios = (m: Record<number, Measured[]>) => m[100_000].map((r, i) => raw[100_000][i].ms / r.ms);
  return {
    bench: 'export',
    stream: 'controls as gzipped CSV to Blob Storage (Azurite)',
    records: sizes.map((n) => exported[n][0].records),
    peakRssMb: Object.fromEntries(sizes.map((n) => [n, round(rss(exported, n), 1)])),
    rawFetchPeakRssMb: Object.fromEntries(sizes.map((n) => [n, round(rss(raw, n), 1)])),
    rssRatio100kVs10k: round(rss(exported, 100_000) / rss(exported, 10_000)),
    rawRssRatio100kVs10k: round(rss(raw, 100_000) / rss(raw, 10_000)),
    rssRatio300kVs100k: round(rss(exported, 300_000) / rss(exported, 100_000)),
    rssGoal: 'flat: 100 k no more than 10 k beyond what the raw fetch loop itself grows',
    // Parquet: written as the pages arrive, row groups of ROW_GROUP (shared/formats/parquet/).
    parquetPeakRssMb: Object.fromEntries(sizes.map((n) => [n, round(rss(parquet, n), 1)])),
    parquetRssRatio100kVs10k: round(rss(parquet, 100_000) / rss(parquet, 10_000)),
    parquetRecordsPerSecond100k: Math.round(rate(parquet, 100_000)),
    recordsPerSecond100k: Math.round(rate(exported, 100_000)),
    rawRecordsPerSecond100k: Math.round(rate(raw, 100_000)),
    // Against the raw reader of the same pages in the same run: median of the rounds' ratios (interleaved).
    csvRatio100k: round(median(ratios(exported))),
    parquetRatio100k: round(median(ratios(parquet))),
    // Each round's own ratio, in order: how far one round is from the median.
    roundRatios: {
      csv: ratios(exported).map((x) => round(x)),
      parquet: ratios(parquet).map((x) => round(x)),
    },
    ratioGoal: '>= 0.85 for gzipped CSV and for Parquet',
  };
}
