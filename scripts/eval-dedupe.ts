/**
 * Scores the cross-source "same job" rule (packages/sources/src/same-job.ts) on a labelled set of
 * pairs of postings:
 *
 *   pnpm eval:dedupe [FILE]      (default: eval/dedupe/pairs.json, see eval/dedupe/README.md)
 *
 * Two scores: the whole rule, and its fields half alone (company, title, location), which is what
 * decides for a career site's own URL and what the labels, taken from ATS ids, do not decide for
 * it. Each false match and each missed one goes to stderr; the last stdout line is the JSON
 * summary. Exits 1 when a precision is under `--min-precision` (0.98, issue 35).
 *
 * Imports the rule by relative path: tsx does not apply the `@gleaner/source` export condition,
 * and the built dist may be stale.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  sameJob,
  sameJobByFields,
  type JobRecord,
  type SameJobVerdict,
} from '../packages/sources/src/same-job.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface LabelledRecord {
  source: string;
  id: string;
  company: string;
  title: string;
  locations: string[];
  url: string;
  /** Unix seconds, as the lists give it. */
  date_posted?: number | null;
}

interface LabelledPair {
  same: boolean;
  label: string;
  /** `dev`: what the rule's settings were chosen on; `test`: held out, the score reported. */
  split: 'dev' | 'test';
  a: LabelledRecord;
  b: LabelledRecord;
}

const recordOf = (record: LabelledRecord): JobRecord => ({
  url: record.url,
  company: record.company,
  title: record.title,
  location: record.locations,
  datePosted: typeof record.date_posted === 'number' ? new Date(record.date_posted * 1000) : null,
});

function score(
  pairs: readonly LabelledPair[],
  rule: (a: JobRecord, b: JobRecord) => SameJobVerdict,
) {
  let truePositives = 0;
  let falsePositives = 0;
  let falseNegatives = 0;
  const mistakes: string[] = [];
  for (const pair of pairs) {
    const verdict = rule(recordOf(pair.a), recordOf(pair.b));
    const said = `${pair.a.company} "${pair.a.title}" ${JSON.stringify(pair.a.locations)} ~ ${pair.b.company} "${pair.b.title}" ${JSON.stringify(pair.b.locations)}`;
    if (verdict.same && pair.same) truePositives += 1;
    else if (verdict.same) {
      falsePositives += 1;
      mistakes.push(`false match (${verdict.by}): ${said}`);
    } else if (pair.same) {
      falseNegatives += 1;
      mistakes.push(`missed (${verdict.by}): ${said}`);
    }
  }
  const round = (value: number) => Math.round(value * 1000) / 1000;
  return {
    precision: round(truePositives / Math.max(1, truePositives + falsePositives)),
    recall: round(truePositives / Math.max(1, truePositives + falseNegatives)),
    truePositives,
    falsePositives,
    falseNegatives,
    mistakes,
  };
}

function main(): number {
  const args = process.argv.slice(2).filter((argument) => argument !== '--');
  const floorAt = args.indexOf('--min-precision');
  const floor = floorAt >= 0 ? Number(args.splice(floorAt, 2)[1]) : 0.98;
  const invokedFrom = process.env.INIT_CWD ?? process.cwd();
  const file =
    args[0] === undefined
      ? path.join(repoRoot, 'eval/dedupe/pairs.json')
      : path.resolve(invokedFrom, args[0]);
  const { pairs } = JSON.parse(readFileSync(file, 'utf8')) as { pairs: LabelledPair[] };
  const splits = {
    dev: pairs.filter((pair) => pair.split === 'dev'),
    test: pairs.filter((pair) => pair.split === 'test'),
  };
  const scores = Object.fromEntries(
    Object.entries(splits).map(([split, subset]) => {
      const whole = score(subset, sameJob);
      const fields = score(subset, sameJobByFields);
      for (const [name, result] of [
        ['rule', whole],
        ['fields alone', fields],
      ] as const)
        for (const mistake of result.mistakes)
          process.stderr.write(`${split} ${name}: ${mistake}\n`);
      return [
        split,
        {
          pairs: subset.length,
          same: subset.filter((pair) => pair.same).length,
          rule: { ...whole, mistakes: undefined },
          fieldsAlone: { ...fields, mistakes: undefined },
        },
      ];
    }),
  ) as Record<'dev' | 'test', { rule: { precision: number }; fieldsAlone: { precision: number } }>;
  process.stdout.write(
    `${JSON.stringify({ pairs: pairs.length, ...scores, minPrecision: floor })}\n`,
  );
  // Decided on the held-out pairs only.
  const { test } = scores;
  return test.rule.precision >= floor && test.fieldsAlone.precision >= floor ? 0 : 1;
}

process.exitCode = main();
