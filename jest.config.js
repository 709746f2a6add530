// Tests run from TypeScript sources, transpiled only (tsconfig's isolatedModules); `npm run typecheck` checks types.
// No native transformer (SWC): its per-platform binaries cannot all be locked from this registry.
const transform = { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] };
// A test's time limit only stops a hang: it is far above what any test takes on a loaded two-core machine
// (jest's 5 s default made CLI tests that start processes fail under load).
const base = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };

module.exports = {
  testTimeout: 60_000,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    {
      ...base,
      displayName: 'faults',
      testMatch: ['<rootDir>/test/faults/**/*.test.ts'],
      // The rows each test records become docs/reliability.md when the suite ends.
      globalSetup: '<rootDir>/test/faults/global-setup.ts',
      globalTeardown: '<rootDir>/test/faults/global-teardown.ts',
    },
    {
      ...base,
      displayName: 'conformance',
      testMatch: ['<rootDir>/test/conformance/**/*.test.ts'],
      // One Keycloak for the whole suite (tens of seconds to boot).
      globalSetup: '<rootDir>/test/conformance/global-setup.ts',
      globalTeardown: '<rootDir>/test/conformance/global-teardown.ts',
    },
  ],
};
