import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureCareerSite, type FixtureCareerSite } from '@gleaner/testing';
import { htmlToText } from './html-text.js';
import { extractPosting } from './index.js';

describe('extractPosting on the fixture career site', () => {
  let site: FixtureCareerSite;

  beforeAll(async () => {
    site = await createFixtureCareerSite({ postings: 60, seed: 7 });
  });
  afterAll(async () => {
    await site.close();
  });

  it('extracts exactly the expected record from every posting page', async () => {
    const postings = site.postings();
    expect(postings).toHaveLength(60);
    for (const posting of postings) {
      const response = await fetch(posting.url);
      expect(response.status).toBe(200);
      const result = extractPosting(await response.text(), { url: posting.url });
      const { descriptionText, ...fields } = result?.posting ?? {};
      // The fixture's expected record predates descriptionText; the rest must match exactly,
      // `description` byte for byte (its clean HTML passes the sanitiser unchanged).
      expect(fields, posting.id).toEqual(posting.expected);
      expect(descriptionText, posting.id).toBe(
        posting.expected.description === null ? null : htmlToText(posting.expected.description),
      );
      for (const source of Object.values(result?.provenance ?? {})) expect(source).toBe('json-ld');
    }
  });

  it('covers the page shapes the fixture varies', () => {
    const postings = site.postings();
    // Guards the test above against a fixture that quietly stopped producing variety.
    expect(postings.some((posting) => posting.expected.isRemote === true)).toBe(true);
    expect(postings.some((posting) => posting.expected.location === null)).toBe(true);
    expect(postings.some((posting) => posting.expected.salaryMin === null)).toBe(true);
    expect(postings.some((posting) => posting.expected.salaryPeriod === 'hour')).toBe(true);
    expect(postings.some((posting) => posting.expected.employmentType?.includes(', '))).toBe(true);
    expect(postings.some((posting) => posting.expected.requirements?.includes('\n'))).toBe(true);
    expect(postings.some((posting) => Array.isArray(posting.jsonLd['@type']))).toBe(true);
  });
});
