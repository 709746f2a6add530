import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The README's promise: `npm ci && npm test` passes on a fresh clone with Node.js and npm alone. Two halves prove it:
 * CI (`.ci/run`, on a fresh clone) runs the README's test command before it makes any Python environment, so a test
 * that needed one fails there; and here, no unit or integration test names a Python reader or its environment (the
 * delta sink's tables are read back in Node: test/helpers/read-delta.mjs; delta-rs and Spark read them in the
 * conformance and fault suites).
 */
const root = resolve(__dirname, '../..');
const files = (dir: string): string[] =>
  readdirSync(join(root, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));

describe('`npm test` needs Node.js and npm alone', () => {
  it('no unit or integration test names Python, a virtual environment or a Python reader', () => {
    const named = [...files('test/unit'), ...files('test/integration')]
      .filter((f) => !f.endsWith('readme-promise.test.ts'))
      .filter((f) =>
        /python|venv|DELTA_PYTHON|SPARK_PYTHON|'delta-rs'|spark-delta\.py|read-delta\.py/i.test(
          readFileSync(join(root, f), 'utf8'),
        ),
      );
    expect(named).toEqual([]);
  });

  it('.ci/run runs the README’s test command before it makes any Python environment', () => {
    const lines = readFileSync(join(root, '.ci/run'), 'utf8').split('\n');
    const test = lines.findIndex((l) => /^npm test\b/.test(l));
    const venv = lines.findIndex((l) => /python3 -m venv/.test(l));
    expect(test).toBeGreaterThan(0);
    expect(venv).toBeGreaterThan(test);
    expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('need only Node.js 22 and npm');
  });
});
