import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'migrations/**', 'storage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      // Workspace packages resolve to their TypeScript sources (the `@gleaner/source` export
      // condition), so a cycle through another package is seen too, not only one inside a package.
      'import-x/resolver-next': [
        createTypeScriptImportResolver({
          conditionNames: ['@gleaner/source', 'types', 'import', 'node', 'default'],
        }),
      ],
    },
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // An import cycle makes load order matter and a module unreadable on its own. Imports by
      // package name are not checked as the start of a cycle (`ignoreExternal`): checking them
      // read every third-party package's type declarations, a third of the lint's rule time (26 s
      // of 79, `TIMING=30`). A cycle between workspace packages needs each to list the other as a
      // dependency (pnpm resolves nothing else), and their builds (`^build`) could not be ordered.
      // A cycle with a relative import in it is still found, through other packages' sources too.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-empty': ['error', { allowEmptyCatch: false }],
      // Fastify plugins and route handlers are async by contract even when they await nothing.
      '@typescript-eslint/require-await': 'off',
      // process.env is read only in config files and process entry points (STYLE.md, convention 2).
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through @gleaner/config in main.ts.',
        },
      ],
    },
  },
  {
    files: [
      'services/*/src/main.ts',
      'services/*/src/migrate.ts',
      'services/api/src/create-key.ts',
      'packages/cli/src/main.ts',
      '**/*.test.ts',
      'packages/testing/src/**',
      'scripts/**',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Tests read JSON bodies loosely; the assertions are what check their shape.
    files: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
