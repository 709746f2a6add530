import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      '.cache/',
      '.local/',
      '.ci/node/',
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
    files: ['cli/**', 'bench/**', 'bin/**', 'test/**', '**/*.js', '**/*.mjs'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Orchestrators replay: no wall clock, no randomness, no I/O (DESIGN: determinism). Their generators live in
    // shared/*/orchestration.ts beside the names and schemas they use; activity bodies live elsewhere.
    files: ['functions/*-orchestrator.ts', 'shared/*/orchestration.ts'],
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
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            'node:*',
            '**/net/*',
            '**/secrets*',
            '**/app',
            '**/access',
            '**/telemetry*',
            '**/state/*',
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: {
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', setTimeout: 'readonly' },
    },
  },
);
