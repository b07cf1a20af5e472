import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'migrations/**', 'storage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: false }],
      // process.env is read only in config files and process entry points (STYLE.md, convention 2).
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration through @gleaner/config in main.ts.' },
      ],
    },
  },
  {
    files: ['services/*/src/main.ts', 'services/*/src/migrate.ts', '**/*.test.ts', 'packages/testing/src/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
