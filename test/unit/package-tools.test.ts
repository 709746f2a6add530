import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { appRoot } from '../../shared/config/app-root';
import { loadConfig } from '../../shared/app';
import {
  DURABLE_BACKENDS,
  DURABLE_PROVIDER_TYPES,
  hostJsonFor,
  npmInvocation,
  SCHEDULER_BUNDLE_RANGE,
} from '../../tools/package';
import { CATALOG_SETTINGS } from '../../shared/catalog/settings';
import { partOf } from '../../shared/config';
import { IMPORT_SETTINGS } from '../../shared/imports/settings';

const root = resolve(__dirname, '../..');
const host = JSON.parse(readFileSync(join(root, 'host.json'), 'utf8')) as Record<string, unknown>;

/** `[4.32.0, 5.0.0)` → its lower bound as [4, 32, 0]; `4.*` counts as 4.0.0. */
const lowerBound = (range: string) =>
  /^\[([\d.*]+),/
    .exec(range)?.[1]
    .split('.')
    .map((p) => (p === '*' ? 0 : Number(p))) ?? [];
const atLeast = (v: number[], min: number[]) => {
  for (let i = 0; i < min.length; i++) if ((v[i] ?? 0) !== min[i]) return (v[i] ?? 0) > min[i];
  return true;
};

describe('host.json as staged for each durable backend', () => {
  it.each(DURABLE_BACKENDS)('%s: a storage provider type the Durable extension registers', (backend) => {
    const staged = hostJsonFor(host, backend) as {
      extensions: { durableTask: { storageProvider: { type: string } } };
      extensionBundle: { id: string; version: string };
    };
    // The host compares names without regard to case ("Storage provider type (…) was not found" otherwise).
    const type = staged.extensions.durableTask.storageProvider.type.toLowerCase();
    expect(DURABLE_PROVIDER_TYPES.map((t) => t.toLowerCase())).toContain(type);
    expect(staged.extensionBundle.id).toBe('Microsoft.Azure.Functions.ExtensionBundle');
  });

  it('the scheduler: azureManaged, from a bundle that has it (4.32.0 on), the connection string Bicep sets', () => {
    const staged = hostJsonFor(host, 'scheduler') as {
      extensions: { durableTask: { storageProvider: Record<string, string> } };
      extensionBundle: { version: string };
    };
    expect(staged.extensions.durableTask.storageProvider).toEqual({
      type: 'azureManaged',
      connectionStringName: 'DURABLE_TASK_SCHEDULER_CONNECTION_STRING',
    });
    expect(staged.extensionBundle.version).toBe(SCHEDULER_BUNDLE_RANGE);
    expect(atLeast(lowerBound(staged.extensionBundle.version), [4, 32, 0])).toBe(true);
    // The storage backend's range does not need it and keeps the file's own.
    expect(atLeast(lowerBound('[4.*, 5.0.0)'), [4, 32, 0])).toBe(false);
    expect((hostJsonFor(host, 'storage') as typeof staged).extensionBundle.version).toBe('[4.*, 5.0.0)');
  });
});

describe('npm as the package step starts it', () => {
  const script = '/usr/lib/node_modules/npm/bin/npm-cli.js';

  it('under npm (npm run package, azd’s hook): npm’s own script with this Node, no shell, on every platform', () => {
    for (const platform of ['win32', 'linux', 'darwin'] as const)
      expect(npmInvocation(['ci'], { platform, env: { npm_execpath: script }, execPath: '/node' })).toEqual({
        file: '/node',
        args: [script, 'ci'],
        shell: false,
      });
    const windows = 'C:\\Program Files\\nodejs\\node_modules\\npm\\bin\\npm-cli.js';
    expect(npmInvocation(['ci'], { platform: 'win32', env: { npm_execpath: windows } }).args[0]).toBe(
      windows,
    );
  });

  it('without npm around it: never a bare `npm` on Windows, where only a shell starts npm.cmd', () => {
    expect(npmInvocation(['ci'], { platform: 'win32', env: {} })).toEqual({
      file: 'npm.cmd',
      args: ['ci'],
      shell: true,
    });
    // Under another package manager, its script is not npm's: npm is found as it would be without one.
    expect(
      npmInvocation(['ci'], { platform: 'win32', env: { npm_execpath: 'C:\\pnpm\\bin\\pnpm.cjs' } }).file,
    ).toBe('npm.cmd');
    expect(npmInvocation(['ci'], { platform: 'linux', env: {} })).toEqual({
      file: 'npm',
      args: ['ci'],
      shell: false,
    });
  });

  it('no tool spawns npm by name: each goes through npmInvocation', () => {
    const sources = ['tools', 'cli', 'bench'].flatMap((dir) =>
      readdirSync(join(root, dir))
        .filter((f) => f.endsWith('.ts'))
        .map((f) => ({ file: `${dir}/${f}`, text: readFileSync(join(root, dir, f), 'utf8') })),
    );
    const bare = /\b(?:execFile|execFileSync|spawn|spawnSync|run)\(\s*['"]npm(?:\.cmd)?['"]/;
    expect(sources.filter((s) => bare.test(s.text)).map((s) => s.file)).toEqual([]);
    expect(readFileSync(join(root, 'tools/package.ts'), 'utf8')).toContain('npmInvocation([');
  });
});

describe('files the settings name are the app’s, wherever the worker starts', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ti-approot-'));
    mkdirSync(join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'host.json'), '{}');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the folder holding host.json above the bundle (dist/main.js), else the working folder', () => {
    expect(appRoot(join(dir, 'dist'), '/elsewhere')).toBe(dir);
    expect(appRoot(dir, '/elsewhere')).toBe(dir);
    expect(appRoot(tmpdir(), '/elsewhere')).toBe('/elsewhere');
    // The project itself, from shared/ (where shared/app.ts asks from).
    expect(appRoot(join(root, 'shared'))).toBe(root);
  });

  it('IMPORT_OPERATIONS_FILE and SYNC_STREAMS_FILE relative to it; the service version from its package.json', () => {
    const config = loadConfig(
      { IMPORT_OPERATIONS_FILE: 'config/ops.json', SYNC_STREAMS_FILE: 'config/streams.json' },
      { cwd: appRoot(join(dir, 'dist'), '/elsewhere') },
    );
    expect(partOf(config, IMPORT_SETTINGS).operationsFile).toBe(join(dir, 'config/ops.json'));
    expect(partOf(config, CATALOG_SETTINGS).streamsFile).toBe(join(dir, 'config/streams.json'));
    expect(config.telemetry.appDir).toBe(dir);
  });
});
