import path from 'node:path';
import type { UserWorkspaceConfig } from 'vitest/config';

/**
 * Per-project Vitest settings shared by every workspace package.
 * Workspace imports resolve to `src/` through the `@gleaner/source` export condition, so unit
 * tests never need a build; only the cross-process tests in `test/` run the built services.
 */
export function sharedProjectConfig(dir: string): UserWorkspaceConfig {
  // Vite's default server conditions, with ours first.
  const conditions = ['@gleaner/source', 'module', 'node', 'development|production'];
  return {
    resolve: { conditions },
    ssr: { resolve: { conditions } },
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
