// Tests run from TypeScript sources through SWC (fast, no type check); `npm run typecheck` checks types.
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
const base = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };

module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
    { ...base, displayName: 'conformance', testMatch: ['<rootDir>/test/conformance/**/*.test.ts'] },
  ],
};
