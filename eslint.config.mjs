import js from '@eslint/js';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';
import tseslint from 'typescript-eslint';

/** The features: every folder of shared/ with a `feature.ts` (its FeatureModule) — a new one needs no line here. */
const SHARED = fileURLToPath(new URL('./shared', import.meta.url));
const FEATURES = readdirSync(SHARED, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(`${SHARED}/${d.name}/feature.ts`))
  .map((d) => d.name)
  .sort();

/**
 * The floors of shared/, lowest first (CONTRIBUTING.md, "The house"): a room may import what stands on a lower floor,
 * never what stands on its own or a higher one — except within its own folder. The features (floor 10) stand side by
 * side and never import each other; shared/app.ts composes them, and only functions/ (and the CLI) import it.
 */
const FLOORS = [
  ['errors', 'log', 'clock', 'ncrontab', 'node-flags', 'check', 'ids'],
  ['config', 'changes', 'streams', 'cache'],
  ['formats', 'telemetry', 'personal'],
  ['net'],
  ['durable', 'secrets', 'graphql'],
  ['state', 'catalog', 'webhooks'],
  ['sinks', 'auth', 'runs'],
  ['access', 'settings'],
  ['feature'],
  // The features side by side, and the doctor beside them: it is given their checks (shared/app.ts), never imports one.
  [...FEATURES, 'doctor'],
  ['app'],
];
const FOLDERS = new Set([
  'errors',
  'log',
  'config',
  'changes',
  'streams',
  'formats',
  'telemetry',
  'net',
  'secrets',
  'graphql',
  'personal',
  'state',
  'catalog',
  'webhooks',
  'sinks',
  'auth',
  'runs',
  'doctor',
  ...FEATURES,
]);
const floorOf = (room) => FLOORS.findIndex((f) => f.includes(room));

/** The import paths a room of shared/ may not use: every room on its floor or above, as that room writes them. */
function forbiddenFor(room) {
  const prefix = FOLDERS.has(room) ? '..' : '.';
  return FLOORS.slice(floorOf(room))
    .flat()
    .filter((other) => other !== room)
    .flatMap((other) =>
      FOLDERS.has(other) ? [`${prefix}/${other}`, `${prefix}/${other}/*`] : [`${prefix}/${other}`],
    );
}
const layerRule = (room, extra = []) => [
  'error',
  {
    patterns: [
      {
        group: forbiddenFor(room),
        message: `shared/${room} may import only lower floors (CONTRIBUTING.md, "The house")`,
      },
      ...extra,
    ],
  },
];
const roomFiles = (room) => (FOLDERS.has(room) ? [`shared/${room}/**/*.ts`] : [`shared/${room}.ts`]);

/** What an orchestrator may not import: I/O, secrets, the app, the clock's sources (DESIGN: determinism). */
const ORCHESTRATOR_IMPORTS = {
  group: ['node:*', '**/net/*', '**/secrets*', '**/app', '**/access', '**/telemetry*', '**/state/*'],
  message: 'orchestrators replay: no I/O, secrets or app here; do it in an activity',
};

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      '.cache/',
      '.local/',
      '.ci/node/',
      '.ci/venv/',
      '.ci/spark-venv/',
      '.ci/graphene-venv/',
      '.ci/peers-venv/',
      '.ci/go/',
      '.deploy/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error'] }],
    },
  },
  {
    files: ['cli/**', 'bench/**', 'bin/**', 'test/**', '**/*.js', '**/*.mjs', '**/*.cjs'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  // The layers: one block per room of shared/.
  ...FLOORS.flat()
    .filter((room) => forbiddenFor(room).length > 0)
    .map((room) => ({
      files: roomFiles(room),
      rules: { 'no-restricted-imports': layerRule(room) },
    })),
  {
    // Orchestrators replay: no wall clock, no randomness, no I/O (DESIGN: determinism). Their generators live in
    // shared/*/orchestration.ts beside the names and schemas they use; activity bodies live elsewhere.
    files: ['shared/*/orchestration.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'use context.df.currentUtcDateTime' },
        { object: 'Math', property: 'random', message: 'orchestrators must be deterministic' },
        {
          object: 'process',
          property: 'env',
          message: 'pass configuration as input or read it in an activity',
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'use context.df.currentUtcDateTime',
        },
        { selector: "CallExpression[callee.name='fetch']", message: 'do I/O in an activity' },
        { selector: 'AwaitExpression', message: 'orchestrators yield tasks; do I/O in an activity' },
      ],
      'no-restricted-imports': ['error', { patterns: [ORCHESTRATOR_IMPORTS] }],
    },
  },
  // An orchestration file keeps its folder's floors as well as the orchestrator's rule (a later block replaces a rule).
  ...FLOORS.flat()
    .filter((room) => FOLDERS.has(room))
    .map((room) => ({
      files: [`shared/${room}/orchestration.ts`],
      rules: { 'no-restricted-imports': layerRule(room, [ORCHESTRATOR_IMPORTS]) },
    })),
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        setTimeout: 'readonly',
        URL: 'readonly',
      },
    },
  },
);
