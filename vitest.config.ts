import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // Builds the operator console when it is missing or stale (the console e2e serves it); records which statuses
    // the API answers on which route, and the summary reporter fails the run on one the OpenAPI does not declare.
    globalSetup: ['test/console/build-console.setup.ts', 'test/helpers/status-coverage.ts'],
    // libsignal prints session records (private keys) through console; in-process tests drop them as the service does.
    setupFiles: ['test/helpers/console-filter.setup.ts'],
    // The `switchboard` processes tests spawn run the sources (what was just edited, as in CI), even when a built
    // dist/ is current; SWITCHBOARD_FROM_SOURCE=0 npm test runs them compiled.
    env: { SWITCHBOARD_FROM_SOURCE: process.env.SWITCHBOARD_FROM_SOURCE ?? '1' },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
