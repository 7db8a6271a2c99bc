import { defineConfig } from 'vitest/config';

// One runner for unit and integration tests of every workspace. Integration tests
// (`*.int.test.ts`) start real processes and sockets; they get longer timeouts.
export default defineConfig({
  test: {
    include: ['{shared,native,agent,app}/src/**/*.test.{ts,tsx}', 'tools/*.test.mjs'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
