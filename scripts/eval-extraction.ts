/**
 * Scores posting extraction against a directory of pages with expected records:
 *
 *   pnpm eval:extraction [DIR] [--no-structured-data] [--no-template] [--as-crawled]
 *                                   (default DIR: packages/extraction/corpus)
 *
 * DIR holds `<name>.html` and `<name>.expected.json` (the expected ExtractedPosting fields, or
 * `null` for a page that is not a posting). Each subfolder of DIR is one site: its pages are
 * learned together into a site template (learnSiteTemplate) and each is then read with it; the
 * pages at the top are sites of one page, read without a template.
 *
 *   --no-structured-data  strip JSON-LD and microdata/RDFa from every page before learning and
 *                         reading: the template and the markup reader alone are measured
 *   --no-template         read every page without a template: today's reader, for comparison
 *   --as-crawled          score each site's pages as its first run holds them once closed: in
 *                         file order, each read with the template learned from the pages before
 *                         it (first from 3 pages, again at 6, 12, 24 and 50), one with no posting
 *                         before any template with the first, every page read again before the
 *                         close with the last template where it fits (readAsFirstRun)
 *
 * Human-readable lines (every mismatch, a table of fields, a table of sites) go to stderr; the
 * last stdout line is the JSON summary `{"pages":…,"fields":{"title":{"precision":…,"recall":…,
 * "f1":…},…},"invented":…,"missed":…,"sites":[{"site","pages","template","title","company",
 * "location","invented","missed"},…]}` (per site: F1 of the three fields).
 * Scoring rules: packages/extraction/src/evaluate.ts.
 *
 * Imports the extraction sources by relative path: tsx does not apply the `@gleaner/source`
 * export condition, and the built dist may be stale.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  evaluateSites,
  formatReport,
  formatSites,
  readSites,
  summariseReport,
  summariseSites,
} from '../packages/extraction/src/index.js';

const FLAGS = new Set(['--no-structured-data', '--no-template', '--as-crawled']);

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function main(): number {
  const args = process.argv.slice(2).filter((argument) => argument !== '--');
  const unknown = args.filter((argument) => argument.startsWith('--') && !FLAGS.has(argument));
  if (unknown.length > 0) {
    process.stderr.write(`eval-extraction: unknown option ${unknown.join(', ')}\n`);
    return 2;
  }
  const [directoryArgument] = args.filter((argument) => !argument.startsWith('--'));
  // pnpm runs scripts from the repository root; a relative DIR means relative to where the
  // command was typed, which pnpm passes as INIT_CWD.
  const invokedFrom = process.env.INIT_CWD ?? process.cwd();
  const directory =
    directoryArgument === undefined
      ? path.join(repoRoot, 'packages/extraction/corpus')
      : path.resolve(invokedFrom, directoryArgument);
  const sites = readSites(directory);
  if (sites.length === 0) {
    process.stderr.write(`eval-extraction: no <name>.html pages in ${directory}\n`);
    return 2;
  }
  const { total, sites: siteReports } = evaluateSites(sites, {
    useTemplate: !args.includes('--no-template'),
    stripStructuredData: args.includes('--no-structured-data'),
    asCrawled: args.includes('--as-crawled'),
  });
  process.stderr.write(
    `eval-extraction: ${directory}\n${formatReport(total).join('\n')}\n\n${formatSites(siteReports).join('\n')}\n`,
  );
  const summary = { ...summariseReport(total), sites: summariseSites(siteReports) };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
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
