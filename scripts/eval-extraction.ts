/**
 * Scores posting extraction against a directory of pages with expected records:
 *
 *   pnpm eval:extraction [DIR]      (default: packages/extraction/corpus)
 *
 * DIR holds `<name>.html` and `<name>.expected.json` (the expected ExtractedPosting fields, or
 * `null` for a page that is not a posting). Human-readable lines (every mismatch, then a table of
 * fields) go to stderr; the last stdout line is the JSON summary
 * `{"pages":…,"fields":{"title":{"precision":…,"recall":…},…},"invented":…,"missed":…}`.
 * Scoring rules: packages/extraction/src/evaluate.ts.
 *
 * Imports the extraction sources by relative path: tsx does not apply the `@gleaner/source`
 * export condition, and the built dist may be stale.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  evaluatePages,
  formatReport,
  readCorpus,
  summariseReport,
} from '../packages/extraction/src/index.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function main(): number {
  const [directoryArgument] = process.argv.slice(2).filter((argument) => argument !== '--');
  // pnpm runs scripts from the repository root; a relative DIR means relative to where the
  // command was typed, which pnpm passes as INIT_CWD.
  const invokedFrom = process.env.INIT_CWD ?? process.cwd();
  const directory =
    directoryArgument === undefined
      ? path.join(repoRoot, 'packages/extraction/corpus')
      : path.resolve(invokedFrom, directoryArgument);
  const pages = readCorpus(directory);
  if (pages.length === 0) {
    process.stderr.write(`eval-extraction: no <name>.html pages in ${directory}\n`);
    return 2;
  }
  const report = evaluatePages(pages);
  process.stderr.write(`eval-extraction: ${directory}\n${formatReport(report).join('\n')}\n`);
  process.stdout.write(`${JSON.stringify(summariseReport(report))}\n`);
  return 0;
}

try {
  process.exitCode = main();
} catch (error: unknown) {
  process.stderr.write(
    `eval-extraction: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
}
