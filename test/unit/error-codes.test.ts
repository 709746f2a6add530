import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import '../../devhost/errors';
import { FEATURES } from '../../shared/app';
import { CORE_ERRORS, declaredErrors } from '../../shared/errors';

/**
 * The error vocabulary is closed and split: the core's areas in shared/errors/, each feature's codes in its own
 * errors.ts (declared when loaded). A code named or read before its declaration is loaded would read as
 * `unexpected` — so every file that names a feature's code imports that feature's errors module.
 */
const root = join(__dirname, '..', '..');
const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
const DECLARING = ['shared/sync', 'shared/exports', 'shared/imports', 'shared/device-login', 'devhost'].map(
  (dir) => join(dir, 'errors.ts'),
);

describe('error codes', () => {
  it('every feature’s codes are declared once the app is composed, each with a title and an action', () => {
    const all = declaredErrors();
    expect(new Set(all.map((e) => e.code)).size).toBe(all.length);
    for (const e of all)
      expect([e.code, e.title.length > 0, e.action.length > 0]).toEqual([e.code, true, true]);
    const features = new Set(all.filter((e) => e.area !== 'core').map((e) => e.area));
    expect([...features].sort()).toEqual(['devhost', 'device-login', 'exports', 'imports', 'sync']);
    for (const f of FEATURES)
      if (f.errors) for (const code of Object.keys(f.errors)) expect(all.map((e) => e.code)).toContain(code);
  });

  it('no file of the vocabulary below the features names a feature’s code', () => {
    const featureCodes = declaredErrors()
      .filter((e) => e.area !== 'core')
      .map((e) => e.code);
    const named = sources('shared/errors').flatMap((f) =>
      featureCodes
        .filter((c) => readFileSync(join(root, f), 'utf8').includes(`${c}:`))
        .map((c) => `${f}: ${c}`),
    );
    expect(named).toEqual([]);
    expect(Object.keys(CORE_ERRORS)).not.toContain('sync_failed');
  });

  it('a file that names a feature’s code imports that feature’s errors module', () => {
    const missing: string[] = [];
    for (const declaring of DECLARING) {
      const codes = [...readFileSync(join(root, declaring), 'utf8').matchAll(/^ {2}([a-z_]+): \{/gm)].map(
        (m) => m[1],
      );
      expect(codes.length).toBeGreaterThan(0);
      for (const file of [...sources('shared'), ...sources('devhost')]) {
        if (file === declaring) continue;
        const text = readFileSync(join(root, file), 'utf8');
        if (!codes.some((c) => text.includes(`'${c}'`))) continue;
        const wanted = relative(dirname(resolve(root, file)), resolve(root, declaring)).replace(/\.ts$/, '');
        const path = wanted.startsWith('.') ? wanted : `./${wanted}`;
        if (!text.includes(`import '${path}'`) && !text.includes(`from '${path}'`))
          missing.push(`${file} → ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
