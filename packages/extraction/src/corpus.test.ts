import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  evaluatePages,
  fieldMatches,
  readCorpus,
  textSimilarity,
  type EvaluatedField,
} from './evaluate.js';

const corpus = readCorpus(path.resolve(import.meta.dirname, '../corpus'));
const report = evaluatePages(corpus);

/**
 * Floors just under what the extractor achieves on the corpus (1.000 for every field when they
 * were set): each allows about one wrong value, so a regression on any page shape fails here.
 * The corpus was written alongside the extractor, so these numbers are in-sample; see
 * corpus/README.md for the held-out check.
 */
const FLOORS: Partial<Record<EvaluatedField, { precision: number; recall: number }>> = {
  title: { precision: 0.98, recall: 0.98 },
  company: { precision: 0.98, recall: 0.98 },
  location: { precision: 0.97, recall: 0.97 },
  locationCity: { precision: 0.97, recall: 0.97 },
  locationRegion: { precision: 0.96, recall: 0.96 },
  locationCountry: { precision: 0.97, recall: 0.97 },
  isRemote: { precision: 0.98, recall: 0.98 },
  employmentType: { precision: 0.97, recall: 0.97 },
  salaryMin: { precision: 0.96, recall: 0.96 },
  salaryMax: { precision: 0.96, recall: 0.96 },
  salaryCurrency: { precision: 0.96, recall: 0.96 },
  salaryPeriod: { precision: 0.96, recall: 0.96 },
  datePosted: { precision: 0.97, recall: 0.97 },
  description: { precision: 0.98, recall: 0.98 },
  requirements: { precision: 0.97, recall: 0.97 },
};

describe('extraction corpus', () => {
  it('has the page shapes it is meant to cover', () => {
    const postings = corpus.filter((page) => page.expected !== null);
    const others = corpus.filter((page) => page.expected === null);
    expect(postings.length).toBeGreaterThanOrEqual(40);
    expect(others.length).toBeGreaterThanOrEqual(8);
    for (const prefix of ['jsonld-', 'microdata-', 'rdfa-', 'dom-', 'nonposting-']) {
      expect(
        corpus.some((page) => page.name.startsWith(prefix)),
        prefix,
      ).toBe(true);
    }
  });

  it('invents no posting for a page that is not one, and misses none', () => {
    expect(report.inventedPages).toEqual([]);
    expect(report.missedPages).toEqual([]);
  });

  it.each(Object.entries(FLOORS))('keeps %s above its floors', (field, floor) => {
    const score = report.fields[field as EvaluatedField];
    const context = JSON.stringify(
      report.mismatches.filter((mismatch) => mismatch.field === field),
    );
    expect(score.precision ?? 0, context).toBeGreaterThanOrEqual(floor.precision);
    expect(score.recall ?? 0, context).toBeGreaterThanOrEqual(floor.recall);
  });

  it('records where each posting came from: the path its name says', () => {
    const sources: Record<string, string> = {
      'jsonld-': 'json-ld',
      'microdata-': 'microdata',
      'rdfa-': 'rdfa',
      'dom-': 'dom',
    };
    for (const [name, result] of report.results) {
      const source = Object.entries(sources).find(([prefix]) => name.startsWith(prefix))?.[1];
      if (source === undefined || result === null) continue;
      expect(result.provenance.description, name).toBe(source);
      for (const field of Object.keys(result.posting) as (keyof typeof result.posting)[]) {
        expect(result.provenance[field] !== undefined, `${name} ${field}`).toBe(
          result.posting[field] !== null,
        );
      }
    }
  });
});

describe('evaluatePages', () => {
  it('scores precision, recall and invented postings as documented', () => {
    const posting =
      '<script type="application/ld+json">{"@type":"JobPosting","title":"A","employmentType":"Full-time"}</script>';
    const result = evaluatePages([
      {
        name: 'right',
        html: posting,
        expected: { title: 'A', employmentType: 'FULL_TIME', company: null },
      },
      { name: 'wrong', html: posting, expected: { title: 'B', employmentType: null } },
      { name: 'missed', html: '<p>nothing</p>', expected: { title: 'C' } },
      { name: 'invented', html: posting, expected: null },
    ]);
    // title: extracted on right, wrong and invented (3), expected on right, wrong, missed (3).
    expect(result.fields.title).toMatchObject({ extracted: 3, expected: 3, correct: 1 });
    expect(result.fields.title.precision).toBeCloseTo(1 / 3);
    expect(result.fields.employmentType).toMatchObject({ extracted: 3, expected: 1, correct: 1 });
    expect(result.fields.company).toMatchObject({
      extracted: 0,
      expected: 0,
      precision: null,
      recall: null,
    });
    expect(result).toMatchObject({
      invented: 1,
      inventedPages: ['invented'],
      missed: 1,
      missedPages: ['missed'],
    });
  });

  it('compares descriptions by their words, not their markup', () => {
    expect(fieldMatches('description', '<p>Build <b>things</b></p>', 'Build things')).toBe(true);
    expect(textSimilarity('a b c d', 'a b c e')).toBe(0.75);
    expect(fieldMatches('description', 'a b c d', 'a b c e')).toBe(false);
    expect(fieldMatches('title', ' Senior\n Engineer ', 'Senior Engineer')).toBe(true);
    expect(fieldMatches('salaryMin', 100, 100.5)).toBe(false);
  });
});
