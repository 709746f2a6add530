import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { LOADED_ON_FIRST_USE, megabytes, stagePackage, type StagedPackage } from '../../tools/package';
import { resolveStreams } from '../../sandbox/streams';
import { streamsFileJson } from '../../shared/catalog';
import { eventually } from '../helpers/host';
import { stackFixture } from '../helpers/stack';

/*
 * Builds the deployment package exactly as `npm run package` does for azd and `func … publish` (a bundle,
 * host.json, `npm ci --omit=dev`) in a temporary folder, then checks what would reach Azure. The Functions host
 * itself cannot run here: the functions are registered through the local host's stand-in for the worker.
 */
const root = resolve(__dirname, '../..');
const CORE = join(root, 'dist', 'devhost', 'functions-core.js');
let out: string;
let staged: StagedPackage;

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'ti-package-'));
  staged = await stagePackage(root, join(out, 'app'));
  console.log(
    `deployment package: ${megabytes(staged.bytes)} (bundle ${megabytes(staged.bundleBytes)}, node_modules ${megabytes(staged.bytes - staged.bundleBytes)})`,
  );
}, 240_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Registers whatever `load` requires with the worker stand-in in a fresh process; answers the function names. */
function registered(cwd: string, load: string): string[] {
  const script = `
    require(${JSON.stringify(CORE)}).installFunctionsCore();
    ${load}
    process.stdout.write(JSON.stringify([...require(${JSON.stringify(CORE)}).registrations.keys()].sort()));`;
  const env = { ...process.env, AzureWebJobsStorage: '', NODE_PATH: '' };
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd, env }).toString()) as string[];
}

describe('deployment package', () => {
  it('holds the bundle, host.json and the package files outside node_modules, nothing else', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.name === 'node_modules'
          ? []
          : e.isDirectory()
            ? files(join(dir, e.name))
            : [relative(staged.dir, join(dir, e.name))],
      );
    expect(files(staged.dir).sort()).toEqual([
      '.funcignore',
      'dist/main.js',
      'host.json',
      'package-lock.json',
      'package.json',
    ]);
    const pkg = JSON.parse(readFileSync(join(staged.dir, 'package.json'), 'utf8'));
    expect(pkg.main).toBe('dist/main.js');
    expect(pkg.scripts).toBeUndefined(); // nothing for a server-side build to run
  });

  it('bundles the functions and shared code only: no sandbox, local host, CLI, tools, bench or test code', () => {
    const ours = staged.bundled.filter((f) => !f.startsWith('node_modules/'));
    expect(ours.filter((f) => !/^(functions|shared)\//.test(f) && f !== 'functions.ts')).toEqual([]);
    expect(ours.filter((f) => f.startsWith('functions/')).length).toBe(staged.functionFiles.length);
    expect(staged.bundled.some((f) => f.startsWith('node_modules/graphql-yoga/'))).toBe(false);
  });

  it('ships no devDependency', () => {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages)
      .filter(([path, p]) => path && p.dev)
      .map(([path]) => path);
    expect(devOnly.length).toBeGreaterThan(100); // jest, typescript, azurite, playwright-core, esbuild, …
    expect(devOnly.filter((path) => existsSync(join(staged.dir, path)))).toEqual([]);
    // By name too (a devDependency can also be a production dependency's dependency, e.g. msal-node).
    for (const name of ['typescript', 'jest', 'azurite', 'playwright-core', 'esbuild', 'graphql-yoga'])
      expect([name, existsSync(join(staged.dir, 'node_modules', name))]).toEqual([name, false]);
  });

  it('registers every function from the package alone, the same ones as the build the local host runs', () => {
    const fromPackage = registered(staged.dir, `require('./dist/main.js');`);
    const dir = join(root, 'dist', 'functions');
    const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
    const fromBuild = registered(
      root,
      `for (const f of ${JSON.stringify(files.map((f) => join(dir, f)))}) require(f);`,
    );
    expect(fromPackage.length).toBeGreaterThanOrEqual(staged.functionFiles.length);
    expect(fromPackage).toEqual(fromBuild);
  });

  it('registering every function loads none of the SDKs meant for first use (the cold start stays cheap)', () => {
    const script = `
      require(${JSON.stringify(CORE)}).installFunctionsCore();
      require('./dist/main.js');
      process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
    const env = { ...process.env, AzureWebJobsStorage: '', NODE_PATH: '' };
    const loaded = JSON.parse(
      execFileSync(process.execPath, ['-e', script], { cwd: staged.dir, env }).toString(),
    ) as string[];
    const early = LOADED_ON_FIRST_USE.filter((m) => loaded.some((f) => f.includes(`/node_modules/${m}/`)));
    expect(early).toEqual([]);
  });

  it('every module the bundle loads on first use resolves and loads inside the package', () => {
    const bundle = readFileSync(join(staged.dir, 'dist', 'main.js'), 'utf8');
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    const required = [...bundle.matchAll(/\b(?:require|import)\(\s*["']([^"']+)["']\s*\)/g)]
      .map((m) => m[1])
      .filter((m) => !builtins.has(m) && !m.startsWith('node:'));
    const outside = [...new Set(required)].filter((m) => m !== '@azure/functions-core').sort();
    expect(outside).toEqual([...LOADED_ON_FIRST_USE].sort());
    const script = `
      for (const m of ${JSON.stringify(outside)}) {
        const at = require.resolve(m, { paths: [${JSON.stringify(join(staged.dir, 'dist'))}] });
        if (!at.startsWith(${JSON.stringify(staged.dir + '/')})) throw new Error(m + ' resolved outside: ' + at);
        require(at);
      }
      process.stdout.write('ok');`;
    const env = { ...process.env, NODE_PATH: '' };
    expect(execFileSync(process.execPath, ['-e', script], { cwd: staged.dir, env }).toString()).toBe('ok');
  });
});

describe('the package’s bundle at work', () => {
  // What the first use loads — durable-functions' HTTP client (rewritten lazy by tools/lazy-requires.ts), graphql,
  // the storage SDK — comes from the package's node_modules: an export runs end to end on the local host with it.
  // The streams come from the package's config/ (SYNC_STREAMS_FILE=config/…), found from the app's folder although the
  // worker runs elsewhere (here the project's folder, where no config/ exists).
  it('runs an export on the local host: started, orchestrated and read back through the durable client', async () => {
    const config = join(staged.dir, 'config');
    mkdirSync(config);
    const [controls] = resolveStreams({ select: ['controls'] });
    writeFileSync(
      join(config, 'streams.json'),
      streamsFileJson([{ ...controls, name: 'controlsFromConfig' }]),
    );
    expect(existsSync(join(process.cwd(), 'config', 'streams.json'))).toBe(false);
    const stack = await stackFixture({
      app: join(staged.dir, 'dist', 'main.js'),
      sandbox: { records: 300 },
      env: { NODE_PATH: '', SYNC_STREAMS_FILE: 'config/streams.json' },
    });
    try {
      const started = await stack.json(
        'exports',
        {
          method: 'POST',
          body: JSON.stringify({ streams: ['controlsFromConfig'], format: 'ndjson' }),
          headers: { 'content-type': 'application/json' },
        },
        stack.keys.function,
      );
      expect(started.status === 202 ? '' : started.text).toBe('');
      const done = await eventually(
        async () => {
          const s = await stack.json(`exports/${started.body.id}`, {}, stack.keys.function);
          return ['completed', 'failed'].includes(s.body.status) && s.body;
        },
        'the export to end',
        60_000,
      );
      expect(done.status === 'completed' ? '' : JSON.stringify(done)).toBe('');
      const [file] = done.files;
      const text = (
        await stack
          .blobService()
          .getContainerClient('exports')
          .getBlockBlobClient(`${started.body.id}/${file.file}`)
          .downloadToBuffer()
      ).toString();
      expect(text.trim().split('\n')).toHaveLength(300);
    } finally {
      await stack.close();
      rmSync(config, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('the operator’s files', () => {
  it('config/ ships whole, where IMPORT_OPERATIONS_FILE=config/… finds it from the app’s folder', async () => {
    const config = mkdtempSync(join(tmpdir(), 'ti-config-'));
    try {
      writeFileSync(join(config, 'import-operations.json'), '{"operations":{"a":"mutation A { a }"}}');
      const dir = join(out, 'with-config');
      await stagePackage(root, dir, { install: false, configDir: config });
      expect(readFileSync(join(dir, 'config', 'import-operations.json'), 'utf8')).toContain('mutation A');
      // Without such a folder nothing is added.
      expect(existsSync(join(staged.dir, 'config'))).toBe(existsSync(join(root, 'config')));
    } finally {
      rmSync(config, { recursive: true, force: true });
    }
  });
});

describe('what the docs say of it', () => {
  it('the bundle’s size in docs/deploy.md is this build’s (`npm run docs` writes it)', () => {
    const quoted = /<!--figure:bundle-mb-->([\d.]+)<!--\/figure-->/.exec(
      readFileSync(join(root, 'docs/deploy.md'), 'utf8'),
    )?.[1];
    expect(`${quoted} MB`).toBe(megabytes(staged.bundleBytes));
  });
});

describe('host.json as it ships', () => {
  it('for the Durable Task Scheduler when DURABLE_BACKEND says so; as it is otherwise', async () => {
    const dir = join(out, 'scheduler');
    await stagePackage(root, dir, { install: false, durableBackend: 'scheduler' });
    const host = JSON.parse(readFileSync(join(dir, 'host.json'), 'utf8'));
    expect(host.extensions.durableTask).toEqual({
      hubName: '%DURABLE_TASK_HUB%',
      storageProvider: {
        // The Durable Task Scheduler's provider as the extension registers it (tools/package.ts,
        // DURABLE_PROVIDER_TYPES; Azure-Samples/Durable-Task-Scheduler's host.json files).
        type: 'azureManaged',
        connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
      },
    });
    expect(JSON.parse(readFileSync(join(staged.dir, 'host.json'), 'utf8'))).toEqual(
      JSON.parse(readFileSync(join(root, 'host.json'), 'utf8')),
    );
  });
});
