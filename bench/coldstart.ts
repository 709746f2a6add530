import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stagePackage } from '../tools/package';

/**
 * A cold start: a fresh Node process that loads the app and registers every function, as the Functions worker
 * does before the first invocation. Compared in the same run, interleaved, with
 * - the durable quickstart: `@azure/functions` + `durable-functions` registering one HTTP starter, one
 *   orchestration and one activity (Microsoft's Durable Functions quickstart for Node) — goal ≤ 1.2×;
 * - `@azure/functions` alone.
 * "The app" is what ships: the deployment package's bundle (tools/package.ts). The unbundled build that the
 * local host runs is measured too, for reference.
 */
const DIST = resolve(__dirname, '..');
const ROOT = resolve(DIST, '..');
const CORE = join(DIST, 'devhost', 'functions-core.js');

const QUICKSTART = `
  const { app } = require('@azure/functions');
  const df = require('durable-functions');
  df.app.orchestration('helloOrchestrator', function* (context) {
    return yield context.df.callActivity('hello', 'Tokyo');
  });
  df.app.activity('hello', { handler: (input) => 'Hello, ' + input });
  app.http('helloStarter', {
    route: 'orchestrators/{name}',
    extraInputs: [df.input.durableClient()],
    handler: async (request, context) => {
      const client = df.getClient(context);
      const id = await client.startNew(request.params.name);
      return client.createCheckStatusResponse(request, id);
    },
  });`;

function sample(load: string): { ms: number; registered: number } {
  const script = `
    const t0 = process.hrtime.bigint();
    require(${JSON.stringify(CORE)}).installFunctionsCore();
    ${load}
    const registered = require(${JSON.stringify(CORE)}).registrations.size;
    process.stdout.write(JSON.stringify({ ms: Number(process.hrtime.bigint() - t0) / 1e6, registered }));`;
  return JSON.parse(
    execFileSync(process.execPath, ['-e', script], {
      cwd: ROOT,
      env: { ...process.env, AzureWebJobsStorage: '' },
    }).toString(),
  ) as { ms: number; registered: number };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

export async function coldstartBench(): Promise<Record<string, unknown>> {
  const staging = mkdtempSync(join(tmpdir(), 'ti-coldstart-'));
  try {
    // The bundle loads nothing from node_modules at registration, so it is measured without them.
    const staged = await stagePackage(ROOT, staging, { install: false });
    const dir = join(DIST, 'functions');
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.js'))
      .map((f) => join(dir, f));
    const kinds = {
      azureFunctionsAlone: `require('@azure/functions');`,
      durableQuickstart: QUICKSTART,
      app: `require(${JSON.stringify(join(staged.dir, 'dist', 'main.js'))});`,
      appUnbundled: `for (const f of ${JSON.stringify(files)}) require(f);`,
    };
    const runs = 21;
    const ms: Record<keyof typeof kinds, number[]> = {
      azureFunctionsAlone: [],
      durableQuickstart: [],
      app: [],
      appUnbundled: [],
    };
    let registered = 0;
    // Interleaved, so drift on a busy machine hits every kind alike.
    for (let i = 0; i < runs; i++)
      for (const kind of Object.keys(kinds) as Array<keyof typeof kinds>) {
        const s = sample(kinds[kind]);
        ms[kind].push(s.ms);
        if (kind === 'app') registered = s.registered;
      }
    const m = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, round(median(v), 1)])) as Record<
      keyof typeof kinds,
      number
    >;
    console.error(
      `cold start, medians of ${runs}: app ${m.app} ms (${registered} functions), durable quickstart ${m.durableQuickstart} ms, @azure/functions alone ${m.azureFunctionsAlone} ms; unbundled app ${m.appUnbundled} ms`,
    );
    return {
      bench: 'coldstart',
      runs,
      functionsRegistered: registered,
      medianMs: m,
      ratioToDurableQuickstart: round(m.app / m.durableQuickstart),
      ratioGoal: '<= 1.2',
      ratioToAzureFunctionsAlone: round(m.app / m.azureFunctionsAlone),
      unbundledRatioToDurableQuickstart: round(m.appUnbundled / m.durableQuickstart),
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
