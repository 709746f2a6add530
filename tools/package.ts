import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { durableBackendOf, switchRefusal, type DurableBackend } from './durable-backend';
import { LAZY_REQUIRED_MODULES, lazyRequires } from './lazy-requires';

export { DURABLE_BACKENDS, durableBackendOf, type DurableBackend } from './durable-backend';

/**
 * The deployment package: what azd (`dist: .deploy`, filled by the service's `prepackage` hook) and
 * `func azure functionapp publish` (run inside the folder) upload to Azure, and nothing else.
 *
 *   host.json, package.json (no scripts), package-lock.json
 *   dist/main.js   every function file bundled into one (esbuild): one file to read and compile at a cold start
 *   node_modules/  `npm ci --omit=dev`: the SDKs the bundle loads on first use (storage, tables, Key Vault,
 *                  identity, qrcode, the PostgreSQL driver) and nothing from devDependencies
 *
 * Why a staging folder and not a remote build: what Azure runs is then exactly what the package test checks
 * here, and no server-side install or TypeScript build can differ from it (docs/deploy.md).
 */
export const LOADED_ON_FIRST_USE = [
  '@azure/storage-blob',
  '@azure/data-tables',
  '@azure/identity',
  '@azure/keyvault-secrets',
  'qrcode',
  'pg',
  'pg-copy-streams',
  // Decoding the admin's ID token, once a device login completes.
  'jose',
  // Parsing and checking GraphQL documents: a stream's, an import operation's, the catalog's.
  'graphql',
  // The telemetry SDK and its exporters: only an app with telemetry configured loads them, at its first span or log
  // record (shared/app.ts).
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/sdk-logs',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-logs-otlp-http',
  '@azure/monitor-opentelemetry-exporter',
  // durable-functions' HTTP client and URL check, required lazily by the bundle (tools/lazy-requires.ts).
  ...LAZY_REQUIRED_MODULES,
];

/** Provided by the Functions worker at run time; never bundled. */
const FROM_THE_HOST = ['@azure/functions-core'];

export interface StagedPackage {
  dir: string;
  /** Bytes of every file in the folder, and of the bundle alone. */
  bytes: number;
  bundleBytes: number;
  /** Source files the bundle holds, relative to the project (dependencies as `node_modules/…`). */
  bundled: string[];
  functionFiles: string[];
}

export interface StageOptions {
  /** `npm ci --omit=dev` in the folder (default true); off only to inspect the bundle. */
  install?: boolean;
  log?: (line: string) => void;
  /**
   * The operator's files that settings name relative to the app's folder (IMPORT_OPERATIONS_FILE,
   * SYNC_STREAMS_FILE): copied whole into the package as `config/` when the folder exists (default `<root>/config`).
   */
  configDir?: string;
  /**
   * Where the durable state lives (`DURABLE_BACKEND`, the Bicep parameter `durableBackend`): the staged host.json's
   * storageProvider follows it. Default: the environment's DURABLE_BACKEND, else `storage`.
   */
  durableBackend?: DurableBackend;
}

/**
 * The storage provider types the Durable extension registers, as host.json's `storageProvider.type` names them. The
 * host looks the type up among its providers without regard to case and does not start on any other ("Storage
 * provider type (…) was not found"). Read from the extension's source and the providers' packages:
 * `AzureStorage` (Azure/azure-functions-durable-extension, AzureStorageDurabilityProviderFactory), `azureManaged`
 * (the Durable Task Scheduler: DurableTaskTriggersScaleProvider's AzureManagedProviderName, and every host.json of
 * Azure-Samples/Durable-Task-Scheduler, e.g. samples/durable-functions/typescript/HelloCities), `mssql`
 * (microsoft/durabletask-mssql) and `Netherite` (microsoft/durabletask-netherite, NetheriteProviderFactory).
 */
export const DURABLE_PROVIDER_TYPES = ['AzureStorage', 'azureManaged', 'mssql', 'Netherite'] as const;

/**
 * The extension bundle range the scheduler needs: for JavaScript apps the `azureManaged` provider is in the bundle
 * from 4.32.0 (Microsoft Learn, "Quickstart: Configure a Durable Functions app to use Durable Task Scheduler").
 */
export const SCHEDULER_BUNDLE_RANGE = '[4.32.0, 5.0.0)';

/**
 * host.json as it ships for a durable backend. `storage`: the file as it is (the storage account's queues and tables,
 * polled at most every 10 s — Microsoft's advice on Flex Consumption). `scheduler`: the Durable Task Scheduler
 * (`azureManaged`) from a bundle that has it, reached through the connection string Bicep sets
 * (DURABLE_TASK_SCHEDULER_CONNECTION_STRING: an endpoint and the identity, no key).
 */
export function hostJsonFor(host: Record<string, unknown>, backend: DurableBackend): Record<string, unknown> {
  if (backend === 'storage') return host;
  const extensions = (host.extensions ?? {}) as Record<string, Record<string, unknown>>;
  return {
    ...host,
    extensionBundle: {
      ...(host.extensionBundle as Record<string, unknown>),
      version: SCHEDULER_BUNDLE_RANGE,
    },
    extensions: {
      ...extensions,
      durableTask: {
        ...extensions.durableTask,
        storageProvider: {
          type: 'azureManaged',
          connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
        },
      },
    },
  };
}

/**
 * How a Node program starts npm on any platform. npm sets `npm_execpath` (its own CLI script) for the scripts it runs,
 * so under `npm run package` — which azd's prepackage hook is — npm is started with this very Node: no shell, no PATH
 * lookup. Without it (`node dist/tools/package.js`) a bare `npm` is found on PATH, except on Windows, where npm is
 * `npm.cmd`, a batch file only a shell can start (execFile on `npm` fails there with ENOENT).
 */
export function npmInvocation(
  args: string[],
  options: { platform?: NodeJS.Platform; env?: Record<string, string | undefined>; execPath?: string } = {},
): { file: string; args: string[]; shell: boolean } {
  const execpath = (options.env ?? process.env).npm_execpath;
  // npm_execpath names another package manager's script under pnpm or yarn: only npm's own is run with Node.
  if (execpath && /npm-cli\.[cm]?js$/.test(execpath))
    return { file: options.execPath ?? process.execPath, args: [execpath, ...args], shell: false };
  const windows = (options.platform ?? process.platform) === 'win32';
  return { file: windows ? 'npm.cmd' : 'npm', args, shell: windows };
}

const run = promisify(execFile);

async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await folderBytes(path);
    else if (entry.isFile()) total += (await stat(path)).size;
  }
  return total;
}

export async function stagePackage(
  root: string,
  outDir: string,
  options: StageOptions = {},
): Promise<StagedPackage> {
  const log = options.log ?? (() => undefined);
  const dir = resolve(outDir);
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'dist'), { recursive: true });

  const functionFiles = (await readdir(join(root, 'functions'))).filter((f) => f.endsWith('.ts')).sort();
  log(`bundling ${functionFiles.length} function files into dist/main.js`);
  const result = await build({
    stdin: {
      contents: functionFiles.map((f) => `import './functions/${f.replace(/\.ts$/, '')}';`).join('\n'),
      resolveDir: root,
      sourcefile: 'functions.ts',
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    outfile: join(dir, 'dist', 'main.js'),
    external: [...FROM_THE_HOST, ...LOADED_ON_FIRST_USE],
    plugins: [lazyRequires()],
    // Whitespace and syntax only: function names stay readable in an operator's stack trace.
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
  });
  const bundled = Object.keys(result.metafile?.inputs ?? {})
    .map((f) => relative(root, resolve(root, f)))
    .sort();

  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  // devDependencies and optionalDependencies stay listed so `npm ci` accepts the lock file; `--omit` leaves them out.
  const staged = {
    name: pkg.name,
    version: pkg.version,
    description: pkg.description,
    license: pkg.license,
    private: true,
    type: 'commonjs',
    main: 'dist/main.js',
    engines: pkg.engines,
    dependencies: pkg.dependencies,
    devDependencies: pkg.devDependencies,
    optionalDependencies: pkg.optionalDependencies,
  };
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(staged, null, 2)}\n`);
  await cp(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
  const backend = options.durableBackend ?? durableBackendOf(process.env.DURABLE_BACKEND);
  const host = JSON.parse(await readFile(join(root, 'host.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(join(dir, 'host.json'), `${JSON.stringify(hostJsonFor(host, backend), null, 2)}\n`);
  const configDir = options.configDir ?? join(root, 'config');
  if (
    await stat(configDir).then(
      (s) => s.isDirectory(),
      () => false,
    )
  ) {
    log(`copying ${relative(root, configDir) || configDir} into the package as config/`);
    await cp(configDir, join(dir, 'config'), { recursive: true });
  }
  await writeFile(
    join(dir, '.funcignore'),
    '# Everything in this folder ships: `npm run package` put only what Azure runs here.\n',
  );
  if (options.install !== false) {
    log('npm ci --omit=dev');
    const npm = npmInvocation([
      'ci',
      '--omit=dev',
      // Optional dependencies are the tests' PostgreSQL builds (and pg's Cloudflare adapter): none runs in Azure.
      '--omit=optional',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--loglevel=error',
    ]);
    await run(npm.file, npm.args, { cwd: dir, maxBuffer: 16 << 20, shell: npm.shell });
  }
  const bytes = await folderBytes(dir);
  const bundleBytes = (await stat(join(dir, 'dist', 'main.js'))).size;
  return { dir, bytes, bundleBytes, bundled, functionFiles };
}

export const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** `npm run package [-- --out DIR]`: stages the deployment package (default `.deploy/`). */
async function main(argv: string[]): Promise<number> {
  const at = argv.indexOf('--out');
  const root = resolve(__dirname, '..', '..');
  // Under azd (the prepackage hook) the environment says what is deployed: a package for the other backend stops here.
  const refusal = switchRefusal(process.env);
  if (refusal) throw new Error(refusal);
  const out = at >= 0 && argv[at + 1] ? argv[at + 1] : join(root, '.deploy');
  const staged = await stagePackage(root, out, { log: (l) => process.stderr.write(`package: ${l}\n`) });
  process.stdout.write(
    `${relative(process.cwd(), staged.dir) || '.'}: ${megabytes(staged.bytes)} (bundle ${megabytes(staged.bundleBytes)}, ${staged.functionFiles.length} function files)\n`,
  );
  return 0;
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`package: ${err.message}\n`);
      process.exit(1);
    },
  );
