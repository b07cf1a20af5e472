import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*', 'services/*', 'test'],
    // Three test files at a time on two cores: most of a file's time is spent waiting (on Redis,
    // Postgres, processes it spawns, deadlines and backoffs), so a third file fills it. Measured
    // on 2 cores with isolate off: 242 s with 2, 188–197 s in three runs with 3, every timing
    // bound still met.
    maxWorkers: 3,
    reporters: ['default', './scripts/vitest-summary-reporter.ts'],
  },
});
