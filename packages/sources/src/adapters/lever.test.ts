import { createFixtureLever, type FixtureLever } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { leverAdapter, leverBaseUrl, leverConfig } from './lever.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let site: FixtureLever;

beforeAll(async () => {
  site = await createFixtureLever({ postings: 250, seed: 11, site: 'lumen' });
});

beforeEach(() => {
  site.resetRequests();
  site.clearFaults();
  site.setIgnoreSkip(false);
});

afterAll(async () => {
  await site.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  leverConfig.parse({ site: site.site, baseUrl: site.baseUrl, ...extra });

describe('lever adapter', () => {
  it('pages with skip and limit until a short page: 250 postings in 3 requests', async () => {
    const result = await leverAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(site.requests().map((request) => request.query)).toEqual([
      { mode: 'json', skip: '0', limit: '100' },
      { mode: 'json', skip: '100', limit: '100' },
      { mode: 'json', skip: '200', limit: '100' },
    ]);
  });

  it('maps every documented field of every posting', async () => {
    const result = await leverAdapter.list(config(), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(leverAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    for (const key of Object.keys(mapped[0]!).filter(
      (key) => !['company', 'locationCity', 'locationRegion'].includes(key),
    )) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
    const periods = new Set(mapped.map((posting) => posting?.salaryPeriod));
    expect(periods).toEqual(new Set(['year', 'month', 'hour', null]));
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
  });

  it('reads requirements from the lists that hold them, and keeps lists in the description', () => {
    const mapped = leverAdapter.mapPosting!({
      text: 'Baker',
      description: '<div>Bread.</div>',
      lists: [
        { text: 'What you will do', content: '<li>Bake</li>' },
        {
          text: 'Qualifications',
          content: '<li>Flour &amp; water</li><li>Early  mornings<br>no problem</li>',
        },
        { text: 'Nice to have', content: '<li>A van</li>' },
        { text: 'Empty', content: '' },
      ],
      additional: '<p>Free bread</p>',
      workplaceType: 'unspecified',
      categories: { location: 'Remote - Canada', commitment: 'Working student' },
      salaryRange: { min: 1000, max: 1000, currency: 'cad', interval: 'one-time' },
      createdAt: 1_767_225_600_000,
    })!.posting;
    expect(mapped).toMatchObject({
      description:
        '<div>Bread.</div>\n<h3>What you will do</h3><ul><li>Bake</li></ul>\n<h3>Qualifications</h3><ul><li>Flour &amp; water</li><li>Early  mornings<br>no problem</li></ul>\n<h3>Nice to have</h3><ul><li>A van</li></ul>\n<p>Free bread</p>',
      requirements: 'Flour & water\nEarly mornings\nno problem',
      isRemote: true,
      location: 'Remote - Canada',
      employmentType: 'WORKING_STUDENT',
      salaryCurrency: 'CAD',
      salaryPeriod: 'one-time',
      datePosted: '2026-01-01T00:00:00.000Z',
    });
  });

  it('stops when the vendor ignores skip and answers the same page again', async () => {
    site.setIgnoreSkip(true);
    const result = await leverAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(false);
    expect(result.postings).toHaveLength(100);
    expect(site.requests()).toHaveLength(2);
  });

  it('stops at the page budget and at the limit, and says the listing is incomplete', async () => {
    const budget = await leverAdapter.list(config({ maxPages: 2 }), { fetcher });
    expect(budget.postings).toHaveLength(200);
    expect(budget.complete).toBe(false);

    site.resetRequests();
    const limited = await leverAdapter.list(config({ pageSize: 50 }), { fetcher }, { limit: 120 });
    expect(limited.postings.map((posting) => posting.externalId)).toEqual(
      site
        .postings()
        .slice(0, 120)
        .map((posting) => posting.externalId),
    );
    expect(limited.complete).toBe(false);
    expect(site.requests()).toHaveLength(3);

    // A limit met exactly on a full page: more may follow, so not complete either.
    const exact = await leverAdapter.list(config(), { fetcher }, { limit: 100 });
    expect(exact.postings).toHaveLength(100);
    expect(exact.complete).toBe(false);

    // A limit above what the site has is not a cut.
    const roomy = await leverAdapter.list(config(), { fetcher }, { limit: 1000 });
    expect(roomy.postings).toHaveLength(250);
    expect(roomy.complete).toBe(true);
  });

  it('lists an empty site as complete', async () => {
    const empty = await createFixtureLever({ postings: 0 });
    try {
      const result = await leverAdapter.list(
        leverConfig.parse({ site: 'acme', baseUrl: empty.baseUrl }),
        { fetcher },
      );
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('takes requirements from lists under any heading of the shared list, and only those', () => {
    const requirementsOf = (...headings: string[]) =>
      leverAdapter.mapPosting!({
        text: 'Baker',
        lists: headings.map((heading, index) => ({
          text: heading,
          content: `<li>Item ${index + 1}</li>`,
        })),
      })!.posting.requirements;
    expect(requirementsOf("What we're looking for", 'What we offer')).toBe('Item 1');
    expect(requirementsOf('What you’ll do', 'Must have', 'Ihr Profil')).toBe('Item 2\nItem 3');
    expect(requirementsOf("What you'll do", 'Nice to have', 'Benefits')).toBeNull();
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [
      null,
      undefined,
      'x',
      {},
      { text: '' },
      { id: 'abc', hostedUrl: 'https://x' },
    ]) {
      expect(leverAdapter.mapPosting!(junk)).toBeNull();
    }
    expect(
      leverAdapter.mapPosting!({
        text: 'Cook',
        createdAt: 'yesterday',
        lists: 'none',
        salaryRange: { min: 'lots' },
      })?.posting,
    ).toMatchObject({
      title: 'Cook',
      datePosted: null,
      requirements: null,
      salaryMin: null,
      salaryCurrency: null,
    });
  });

  it('picks the global or EU host by region, unless a base URL is given', () => {
    expect(leverConfig.parse({ site: 'acme' })).toMatchObject({
      region: 'global',
      pageSize: 100,
      maxPages: 200,
    });
    expect(leverBaseUrl(leverConfig.parse({ site: 'acme' }))).toBe('https://api.lever.co');
    expect(leverBaseUrl(leverConfig.parse({ site: 'acme', region: 'eu' }))).toBe(
      'https://api.eu.lever.co',
    );
    expect(
      leverBaseUrl(
        leverConfig.parse({ site: 'acme', region: 'eu', baseUrl: 'http://127.0.0.1:9' }),
      ),
    ).toBe('http://127.0.0.1:9');
    expect(leverConfig.safeParse({ site: 'acme', region: 'us' }).success).toBe(false);
    expect(leverConfig.safeParse({ site: 'acme', pageSize: 0 }).success).toBe(false);
  });
});
