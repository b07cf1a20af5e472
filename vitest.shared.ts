import path from 'node:path';
import type { UserWorkspaceConfig } from 'vitest/config';

/**
 * Per-project Vitest settings shared by every workspace package.
 * Workspace imports resolve to `src/` through the `@gleaner/source` export condition, so unit
 * tests never need a build; only the cross-process tests in `test/` run the built services.
 */
export function sharedProjectConfig(dir: string): UserWorkspaceConfig {
  const conditions = ['@gleaner/source', 'node', 'import', 'module', 'default'];
  return {
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ['@gleaner/source'] } },
    test: {
      name: path.basename(dir),
      root: dir,
      environment: 'node',
      include: ['src/**/*.test.ts', '*.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
    },
  };
}
