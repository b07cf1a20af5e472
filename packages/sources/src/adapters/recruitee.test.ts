import { createFixtureRecruitee, type FixtureRecruitee } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recruiteeAdapter, recruiteeBaseUrl, recruiteeConfig } from './recruitee.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let site: FixtureRecruitee;

beforeAll(async () => {
  site = await createFixtureRecruitee({ postings: 45, seed: 17, company: 'tessellate' });
});

beforeEach(() => {
  site.resetRequests();
  site.clearFaults();
});

afterAll(async () => {
  await site.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  recruiteeConfig.parse({ company: site.company, baseUrl: site.baseUrl, ...extra });

describe('recruitee adapter', () => {
  it('lists every offer in one request, each with its payload', async () => {
    const result = await recruiteeAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(site.requests().map((request) => request.target)).toEqual(['/api/offers/']);
  });

  it('maps every documented field of every offer', async () => {
    const result = await recruiteeAdapter.list(config(), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(recruiteeAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    for (const key of Object.keys(mapped[0]!)) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
  });

  it('stops at the limit and says the listing is incomplete', async () => {
    const result = await recruiteeAdapter.list(
      config({ maxPostings: 12 }),
      { fetcher },
      { limit: 20 },
    );
    expect(result.postings).toHaveLength(12);
    expect(result.complete).toBe(false);
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [null, 0, { id: 1, careers_url: 'https://x' }, { title: '\n' }])
      expect(recruiteeAdapter.mapPosting!(junk)).toBeNull();
    expect(
      recruiteeAdapter.mapPosting!({
        title: 'Barista',
        salary: { min: '12,5', max: 14, period: 'fortnight', currency: 'euro' },
        published_at: '2026-01-02 03:04:05 UTC',
      })?.posting,
    ).toMatchObject({
      salaryMin: null,
      salaryMax: 14,
      salaryCurrency: null,
      salaryPeriod: 'fortnight',
      datePosted: '2026-01-02T03:04:05.000Z',
    });
  });

  it('builds the default host from the company and refuses names that are not host labels', () => {
    expect(recruiteeBaseUrl(recruiteeConfig.parse({ company: 'Acme' }))).toBe(
      'https://acme.recruitee.com',
    );
    for (const company of ['acme.evil.example', 'a/b', '-acme', 'acme@x']) {
      expect(recruiteeConfig.safeParse({ company }).success, company).toBe(false);
    }
  });
});
