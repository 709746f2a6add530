import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LOADED_ON_FIRST_USE, stagePackage } from '../tools/package';

/**
 * A cold start: a fresh Node process that loads the app and registers every function, as the Functions worker
 * does before the first invocation. Compared in the same run, interleaved, with
 * - the durable quickstart: `@azure/functions` + `durable-functions` registering one HTTP starter, one
 *   orchestration and one activity (Microsoft's Durable Functions quickstart for Node) — goal ≤ 1.1× to the first
 *   answer, with telemetry on as in Azure;
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

/** Telemetry on, as in Azure: Application Insights and an OTLP endpoint (neither is reached by a cold start). */
const TELEMETRY_ON = {
  APPLICATIONINSIGHTS_CONNECTION_STRING:
    'InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://127.0.0.1:9/',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
};

/**
 * The first invocation after registering, to its answer: the app's GET /api/health (anonymous, what a probe calls
 * first; it sets the app up), the quickstart's activity. Handlers are called as the worker calls them once it has
 * built their arguments (health reads none; the activity its input), so neither pays for a second copy of
 * `@azure/functions` loaded by the bench.
 */
const FIRST_CALL = `
    const health = await require(${JSON.stringify(CORE)}).registrations.get('health').handler();
    if (health.jsonBody?.status !== 'ok') throw new Error('health answered ' + JSON.stringify(health));`;
const QUICKSTART_FIRST_CALL = `
    const hello = await require(${JSON.stringify(CORE)}).registrations.get('hello').handler('Tokyo');
    if (hello !== 'Hello, Tokyo') throw new Error('hello answered ' + hello);`;

/** The telemetry SDK as shared/telemetry/setup.ts loads it (tools/package.ts keeps it out of the bundle). */
const TELEMETRY_SDK = LOADED_ON_FIRST_USE.filter(
  (m) => m.startsWith('@opentelemetry/') || m === '@azure/monitor-opentelemetry-exporter',
)
  .map((m) => `require(${JSON.stringify(m)});`)
  .join('');

function sample(load: string, env: Record<string, string> = {}): { ms: number; registered: number } {
  const script = `(async () => {
    const t0 = process.hrtime.bigint();
    require(${JSON.stringify(CORE)}).installFunctionsCore();
    ${load}
    const registered = require(${JSON.stringify(CORE)}).registrations.size;
    process.stdout.write(JSON.stringify({ ms: Number(process.hrtime.bigint() - t0) / 1e6, registered }));
    process.exit(0);
  })();`;
  return JSON.parse(
    execFileSync(process.execPath, ['-e', script], {
      cwd: ROOT,
      // The bundle's modules for first use resolve from the project's node_modules (the package holds them too).
      env: { ...process.env, AzureWebJobsStorage: '', NODE_PATH: join(ROOT, 'node_modules'), ...env },
    }).toString(),
  ) as { ms: number; registered: number };
}

/**
 * What loading the CLI costs: peak RSS (MB) of `tenant-integrations ARGS` — printed by a preloaded hook at exit
 * — beside `node -e 0`, the floor any Node command starts from.
 */
function cliRssMb(args: string[]): number {
  const hook = `process.on('exit', () => require('fs').writeSync(2, '\\nRSS ' + process.resourceUsage().maxRSS + '\\n'));`;
  const target = args.length ? [join(ROOT, 'bin', 'tenant-integrations.js'), ...args] : ['-e', '0'];
  const r = spawnSync(process.execPath, ['--require', hookFile(hook), ...target], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const kb = /RSS (\d+)/.exec(r.stderr)?.[1];
  if (!kb) throw new Error(`no RSS from ${args.join(' ') || 'node -e 0'}: ${r.stderr}`);
  return Number(kb) / 1024;
}

let hookPath: string | undefined;
const hookFile = (text: string) => {
  hookPath ??= join(mkdtempSync(join(tmpdir(), 'ti-rss-')), 'rss.js');
  writeFileSync(hookPath, text);
  return hookPath;
};

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
    const bundle = `require(${JSON.stringify(join(staged.dir, 'dist', 'main.js'))});`;
    const kinds = {
      azureFunctionsAlone: [`require('@azure/functions');`],
      durableQuickstart: [QUICKSTART],
      durableQuickstartFirstCall: [`${QUICKSTART}${QUICKSTART_FIRST_CALL}`],
      app: [bundle],
      // Registration with telemetry configured: the SDK is not loaded yet (it loads with the first span or log record).
      appTelemetryOn: [bundle, TELEMETRY_ON],
      // …and what the first invocation then costs, with telemetry off and on.
      appFirstCall: [`${bundle}${FIRST_CALL}`],
      appFirstCallTelemetryOn: [`${bundle}${FIRST_CALL}`, TELEMETRY_ON],
      // …and what the first span or log record adds: the telemetry SDK loading from node_modules.
      appTelemetrySdkLoaded: [`${bundle}${FIRST_CALL}${TELEMETRY_SDK}`, TELEMETRY_ON],
      appUnbundled: [`for (const f of ${JSON.stringify(files)}) require(f);`],
    } as const;
    const runs = 21;
    const ms = Object.fromEntries(Object.keys(kinds).map((k) => [k, [] as number[]])) as Record<
      keyof typeof kinds,
      number[]
    >;
    let registered = 0;
    // Interleaved, so drift on a busy machine hits every kind alike.
    for (let i = 0; i < runs; i++)
      for (const kind of Object.keys(kinds) as Array<keyof typeof kinds>) {
        const [load, env] = kinds[kind] as readonly [string, Record<string, string>?];
        const s = sample(load, env);
        ms[kind].push(s.ms);
        if (kind === 'app') registered = s.registered;
      }
    const m = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, round(median(v), 1)])) as Record<
      keyof typeof kinds,
      number
    >;
    console.error(
      `cold start, medians of ${runs}: app ${m.app} ms (${registered} functions; ${m.appTelemetryOn} ms with telemetry configured), durable quickstart ${m.durableQuickstart} ms, @azure/functions alone ${m.azureFunctionsAlone} ms; unbundled app ${m.appUnbundled} ms; to the first answer ${m.appFirstCall} ms, ${m.appFirstCallTelemetryOn} ms with telemetry on, the quickstart's ${m.durableQuickstartFirstCall} ms; the telemetry SDK adds ${round(m.appTelemetrySdkLoaded - m.appFirstCallTelemetryOn, 1)} ms at the first span or log record`,
    );
    // The CLI: what `--help` and `sync --help` load (each command's module loads only when it runs).
    const cli = { node: [] as number[], help: [] as number[], syncHelp: [] as number[] };
    for (let i = 0; i < 5; i++) {
      cli.node.push(cliRssMb([]));
      cli.help.push(cliRssMb(['--help']));
      cli.syncHelp.push(cliRssMb(['sync', '--help']));
    }
    const rss = (k: keyof typeof cli) => round(median(cli[k]), 1);
    console.error(
      `CLI peak RSS, medians of 5: --help ${rss('help')} MB, sync --help ${rss('syncHelp')} MB; node -e 0 ${rss('node')} MB`,
    );
    return {
      bench: 'coldstart',
      cliPeakRssMb: { help: rss('help'), syncHelp: rss('syncHelp'), nodeAlone: rss('node') },
      cliSyncHelpRatioToNode: round(rss('syncHelp') / rss('node')),
      runs,
      functionsRegistered: registered,
      medianMs: m,
      ratioToDurableQuickstart: round(m.app / m.durableQuickstart),
      // The goal's measure: to the first answer, telemetry on, against the quickstart's first answer.
      ratioTelemetryOnToDurableQuickstart: round(m.appFirstCallTelemetryOn / m.durableQuickstartFirstCall),
      ratioGoal: '<= 1.1',
      firstCallTelemetryCostMs: round(m.appFirstCallTelemetryOn - m.appFirstCall, 1),
      telemetrySdkLoadMs: round(m.appTelemetrySdkLoaded - m.appFirstCallTelemetryOn, 1),
      ratioToAzureFunctionsAlone: round(m.app / m.azureFunctionsAlone),
      unbundledRatioToDurableQuickstart: round(m.appUnbundled / m.durableQuickstart),
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
    if (hookPath) rmSync(join(hookPath, '..'), { recursive: true, force: true });
  }
}
