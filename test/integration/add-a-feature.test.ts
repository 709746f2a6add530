import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * CONTRIBUTING's "Add a feature", followed in a copy of the project: a toy feature — its folder with its
 * `feature.ts` (a kind of run with its details, its parts, a route), its functions' file, and one line in
 * shared/app.ts's list. Nothing else is edited, and the project takes it whole: it type-checks, the lint's floors
 * know the new folder for a feature (and refuse it importing another), and the app's composed lists — run kinds,
 * routes the fault suite calls — hold it.
 */
jest.setTimeout(300_000);

const root = resolve(__dirname, '../..');
let copy: string;

/** Every file of the project as it is here (tracked and new, not ignored), into `to`; node_modules linked. */
function copyProject(to: string): string[] {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
  })
    .toString()
    .split('\0')
    .filter(Boolean)
    .filter((f) => {
      try {
        readFileSync(join(root, f)); // deleted in the work tree: not part of the project now
        return true;
      } catch {
        return false;
      }
    });
  for (const f of files) {
    mkdirSync(dirname(join(to, f)), { recursive: true });
    copyFileSync(join(root, f), join(to, f));
  }
  symlinkSync(join(root, 'node_modules'), join(to, 'node_modules'), 'dir');
  return files;
}

const TOY_FEATURE = `import { z } from 'zod';
import { part, type FeatureModule } from '../feature';

/** The toy's parts: what its function answers with, built on first use. */
export const TOY_PARTS = part('toy', (host) => ({ greeting: \`hello \${host.config.tenant?.name ?? 'sandbox'}\` }));

/** A toy feature: a kind of run with its own details, its parts, one route. */
export const TOY_FEATURE: FeatureModule = {
  name: 'toy',
  runs: {
    kind: 'toy',
    span: 'toy run',
    failedRecord: 'toy run failed',
    instanceId: (run) => \`toy-\${run.id}\`,
    perRun: true,
    details: {
      schema: z.object({ greeted: z.number().int().optional() }),
      counts: () => ({ read: 0, changes: 0 }),
      html: (r) => \`<p>greeted \${Number(r.greeted ?? 0)} times</p>\`,
    },
  },
  parts: TOY_PARTS,
  routes: [{ method: 'GET', route: 'toy', path: 'toy', key: 'function' }],
};
`;

const TOY_FUNCTIONS = `import { app } from '@azure/functions';
import { appContext, httpDoor } from '../shared/app';
import { TOY_PARTS } from '../shared/toy/feature';

/** GET /api/toy (function key): the toy's greeting. */
app.http('toyHello', {
  route: 'toy',
  methods: ['GET'],
  authLevel: 'function',
  handler: httpDoor('toy', async () => ({ jsonBody: appContext().part(TOY_PARTS) })),
});
`;

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'ti-add-a-feature-'));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('add a feature', () => {
  it('a toy feature touches one existing file (the list in shared/app.ts), type-checks, passes the floors, and is in every composed list', () => {
    const before = copyProject(copy);
    const original = new Map(before.map((f) => [f, readFileSync(join(copy, f), 'utf8')]));

    // The toy, as CONTRIBUTING's "Add a feature" says.
    mkdirSync(join(copy, 'shared/toy'));
    writeFileSync(join(copy, 'shared/toy/feature.ts'), TOY_FEATURE);
    writeFileSync(join(copy, 'functions/toy.ts'), TOY_FUNCTIONS);
    const appFile = join(copy, 'shared/app.ts');
    writeFileSync(
      appFile,
      readFileSync(appFile, 'utf8')
        .replace(
          "import { SYNC_FEATURE } from './sync/feature';",
          "import { SYNC_FEATURE } from './sync/feature';\nimport { TOY_FEATURE } from './toy/feature';",
        )
        .replace(
          /(export const FEATURES: readonly FeatureModule\[\] = \[[^\]]*?)\n\];/,
          '$1\n  TOY_FEATURE,\n];',
        ),
    );

    const touched = before.filter((f) => readFileSync(join(copy, f), 'utf8') !== original.get(f));
    expect(touched).toEqual(['shared/app.ts']);

    const run = (cmd: string, args: string[]) => {
      try {
        return execFileSync(cmd, args, { cwd: copy, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        // What the tool said, not only that it failed.
        const e = err as { stdout?: string; stderr?: string; message: string };
        throw Object.assign(new Error(`${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`), {
          stdout: e.stdout,
          stderr: e.stderr,
        });
      }
    };
    const node = process.execPath;
    run(node, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit']);
    run(node, ['node_modules/eslint/bin/eslint.js', 'shared/toy', 'functions/toy.ts', 'shared/app.ts']);
    // The floors know the toy for a feature: it may not import another feature.
    writeFileSync(join(copy, 'shared/toy/peek.ts'), "export { SYNC_PARTS } from '../sync/feature';\n");
    let refused = '';
    try {
      run(node, ['node_modules/eslint/bin/eslint.js', 'shared/toy/peek.ts']);
    } catch (err) {
      refused = String((err as { stdout?: string }).stdout);
    }
    expect(refused).toContain('shared/toy may import only lower floors');
    rmSync(join(copy, 'shared/toy/peek.ts'));

    // Built, the app's composed lists hold it: its kind of run (with its details) and its route for the fault suite.
    run(node, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
    const composed = JSON.parse(
      run(node, [
        '-e',
        `const a = require('./dist/shared/app'); process.stdout.write(JSON.stringify({ kinds: Object.keys(a.RUN_KINDS), details: Boolean(a.RUN_KINDS.toy?.details?.html), routes: a.FEATURE_ROUTES.map((r) => r.route) }))`,
      ]),
    ) as { kinds: string[]; details: boolean; routes: string[] };
    expect(composed.kinds).toContain('toy');
    expect(composed.details).toBe(true);
    expect(composed.routes).toContain('toy');
  });
});
