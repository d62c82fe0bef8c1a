import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    // A home of the run's own for every process of it (HOME, XDG_*, APPDATA, the keychain's D-Bus), and a failed run
    // when anything wrote to the real default data dir; then the operator console, built when missing or stale (the
    // console e2e serves it); and a record of which statuses the API answers on which route (the summary reporter
    // fails the run on one the OpenAPI document does not declare).
    globalSetup: ['test/helpers/isolated-home.setup.ts', 'test/helpers/pg-databases.setup.ts', 'test/console/build-console.setup.ts', 'test/helpers/status-coverage.ts'],
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
