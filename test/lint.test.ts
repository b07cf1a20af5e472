import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The workspace's lint refuses import cycles (`import-x/no-cycle`, eslint.config.js). `npm test`
 * lints every package, so the workspace has none; this shows the rule fires on one.
 */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixture = path.join(repoRoot, 'test', `lint-cycle-fixture-${process.pid}`);

afterAll(() => rmSync(fixture, { recursive: true, force: true }));

describe('lint', () => {
  it('fails on an import cycle, also one through a third module', async () => {
    mkdirSync(fixture, { recursive: true });
    // A project of its own: the type-aware rules then load these three files, not every test
    // file of test/tsconfig.json and what they import (14 s of the test's 15 on 2 cores).
    writeFileSync(
      path.join(fixture, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.base.json', include: ['*.ts'] }),
    );
    writeFileSync(
      path.join(fixture, 'a.ts'),
      "import { b } from './b.js';\n\nexport const a = (): string => `a${b()}`;\n",
    );
    writeFileSync(
      path.join(fixture, 'b.ts'),
      "import { c } from './c.js';\n\nexport const b = (): string => `b${c()}`;\n",
    );
    writeFileSync(
      path.join(fixture, 'c.ts'),
      "import { a } from './a.js';\n\nexport const c = (): string => (a.length > 0 ? 'c' : '');\n",
    );
    const eslint = new ESLint({ cwd: repoRoot });
    const results = await eslint.lintFiles([path.join(fixture, '*.ts')]);
    const cycles = results.flatMap((result) =>
      result.messages
        .filter((message) => message.ruleId === 'import-x/no-cycle')
        .map(() => path.basename(result.filePath)),
    );
    expect(cycles.sort()).toEqual(['a.ts', 'b.ts', 'c.ts']);
  });
});
