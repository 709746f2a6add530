import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import '../../devhost/host';
import { FEATURES } from '../../shared/app';
import { CORE_ERRORS, declaredErrors } from '../../shared/errors';

/**
 * The error vocabulary is closed and split: the core's areas in shared/errors/, each feature's codes in its own
 * errors.ts, registered when the app composes its features (the local host registers its own as it loads) — never by
 * loading a file for its side effect.
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

  it('no file loads an errors table for its side effect: a feature’s codes reach the vocabulary through the app’s list', () => {
    const sideEffects = [
      ...sources('shared'),
      ...sources('devhost'),
      ...sources('functions'),
      ...sources('cli'),
    ].filter((file) => /^import '[^']*errors';/m.test(readFileSync(join(root, file), 'utf8')));
    expect(sideEffects).toEqual([]);
    for (const declaring of DECLARING.filter((d) => d.startsWith('shared/'))) {
      const feature = FEATURES.find((f) =>
        declaring.startsWith(`shared/${f.name === 'exports' ? 'exports' : f.name}/`),
      );
      expect([declaring, Boolean(feature?.errors)]).toEqual([declaring, true]);
    }
  });
});
