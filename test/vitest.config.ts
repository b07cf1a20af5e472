import { defineProject } from 'vitest/config';
import { sharedProjectConfig } from '../vitest.shared.js';

const shared = sharedProjectConfig(import.meta.dirname);
// Cross-service tests: they spawn the built services as OS processes.
export default defineProject({
  ...shared,
  test: {
    ...shared.test,
    name: 'system',
    include: ['**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
