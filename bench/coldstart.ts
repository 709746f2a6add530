import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Time to load the app with every function registered, as a ratio to loading `@azure/functions` alone.
 * Each sample is a fresh Node process (a cold start); medians of both, measured in the same run.
 */
const DIST = resolve(__dirname, '..');
const CORE = join(DIST, 'devhost', 'functions-core.js');

function sample(files: string[]): number {
  const script = `
    const t0 = process.hrtime.bigint();
    require(${JSON.stringify(CORE)}).installFunctionsCore();
    require('@azure/functions');
    for (const f of ${JSON.stringify(files)}) require(f);
    const n = require(${JSON.stringify(CORE)}).registrations.size;
    process.stdout.write(JSON.stringify({ ms: Number(process.hrtime.bigint() - t0) / 1e6, n }));`;
  const out = JSON.parse(
    execFileSync(process.execPath, ['-e', script], {
      cwd: resolve(DIST, '..'),
      env: { ...process.env, AzureWebJobsStorage: '' },
    }).toString(),
  );
  return out.ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function coldstartBench(): Promise<Record<string, unknown>> {
  const dir = join(DIST, 'functions');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(dir, f));
  const runs = 15;
  const baseline: number[] = [];
  const app: number[] = [];
  // Interleaved, so drift on a busy machine hits both alike.
  for (let i = 0; i < runs; i++) {
    baseline.push(sample([]));
    app.push(sample(files));
  }
  const b = median(baseline);
  const a = median(app);
  console.error(
    `@azure/functions alone: ${b.toFixed(1)} ms; app with ${files.length} function file(s): ${a.toFixed(1)} ms (medians of ${runs} cold processes)`,
  );
  return {
    bench: 'coldstart',
    runs,
    functionFiles: files.length,
    medianMs: { azureFunctionsAlone: Number(b.toFixed(2)), app: Number(a.toFixed(2)) },
    ratioToAzureFunctionsAlone: Number((a / b).toFixed(3)),
  };
}
