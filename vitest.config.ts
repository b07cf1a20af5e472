import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*', 'services/*', 'test'],
    // Two cores: test files talk to real Redis and Postgres and some spawn processes.
    maxWorkers: 2,
    reporters: ['default', './scripts/vitest-summary-reporter.ts'],
  },
});
