import { createFixtureWorkable, type FixtureWorkable } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { workableAdapter, workableConfig } from './workable.js';

const fetcher = createTestFetcher();
let account: FixtureWorkable;

beforeAll(async () => {
  account = await createFixtureWorkable({ postings: 60, seed: 23, subdomain: 'tessellate' });
});

beforeEach(() => {
  account.resetRequests();
  account.clearFaults();
  account.setMissing(false);
});

afterAll(async () => {
  await account.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  workableConfig.parse({ subdomain: account.subdomain, baseUrl: account.baseUrl, ...extra });

describe('workable adapter', () => {
  it('lists every job of the account in one request, with details', async () => {
    const result = await workableAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      account.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(account.requests().map((request) => request.target)).toEqual([
      '/api/v1/widget/accounts/tessellate?details=true',
    ]);
  });

  it('maps every documented field of every job', async () => {
    const result = await workableAdapter.list(config(), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(workableAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(account.postings().map((posting) => posting.expected));
    // The widget publishes neither pay nor the company per job.
    const unmapped = [
      'company',
      'salaryMin',
      'salaryMax',
      'salaryCurrency',
      'salaryPeriod',
    ] as const;
    for (const key of Object.keys(mapped[0]!) as (keyof NonNullable<(typeof mapped)[0]>)[]) {
      const filled = mapped.some((posting) => posting?.[key] != null);
      expect(filled, key).toBe(!(unmapped as readonly string[]).includes(key));
    }
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
    expect(mapped.some((posting) => posting?.requirements === null)).toBe(true);
  });

  it('reads the first shown location, then the top-level fields, and survives odd fields', () => {
    const mapped = workableAdapter.mapPosting!({
      title: 'Baker',
      employment_type: 'Full-time',
      telecommuting: 'sometimes',
      locations: [
        { city: 'Hidden', countryCode: 'FR', hidden: true },
        { city: 'Lyon', region: 'Auvergne-Rhône-Alpes', countryCode: 'fr' },
      ],
      requirements: '<ul><li>Flour &amp; water</li></ul>',
      published_on: 'yesterday',
      created_at: '2026-01-02',
    })!.posting;
    expect(mapped).toMatchObject({
      location: 'Lyon, Auvergne-Rhône-Alpes, FR',
      locationCountry: 'FR',
      isRemote: false,
      employmentType: 'FULL_TIME',
      datePosted: null,
      description: '<h3>Requirements</h3>\n<ul><li>Flour &amp; water</li></ul>',
      requirements: 'Flour & water',
    });
    expect(
      workableAdapter.mapPosting!({
        title: 'Cook',
        city: 'Porto',
        country: 'Portugal',
        locations: 'none',
        created_at: '2026-01-02',
      })!.posting,
    ).toMatchObject({
      location: 'Porto, Portugal',
      locationCity: 'Porto',
      locationCountry: 'Portugal',
      isRemote: false,
      datePosted: '2026-01-02',
      description: null,
      requirements: null,
    });
    for (const junk of [null, 'x', {}, { title: '  ' }, { shortcode: 'ABC' }]) {
      expect(workableAdapter.mapPosting!(junk)).toBeNull();
    }
  });

  it('stops at the limit and the postings budget, and says the listing is incomplete', async () => {
    const limited = await workableAdapter.list(config(), { fetcher }, { limit: 10 });
    expect(limited.postings.map((posting) => posting.externalId)).toEqual(
      account
        .postings()
        .slice(0, 10)
        .map((posting) => posting.externalId),
    );
    expect(limited.complete).toBe(false);
    const budget = await workableAdapter.list(config({ maxPostings: 59 }), { fetcher });
    expect(budget.postings).toHaveLength(59);
    expect(budget.complete).toBe(false);
    const roomy = await workableAdapter.list(config({ maxPostings: 60 }), { fetcher });
    expect(roomy.complete).toBe(true);
  });

  it('lists an empty account as complete', async () => {
    const empty = await createFixtureWorkable({ postings: 0 });
    try {
      const result = await workableAdapter.list(
        workableConfig.parse({ subdomain: 'acme', baseUrl: empty.baseUrl }),
        { fetcher },
      );
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('validates its config', () => {
    expect(workableConfig.parse({ subdomain: 'acme' })).toEqual({
      subdomain: 'acme',
      baseUrl: 'https://apply.workable.com',
      maxPostings: 10_000,
    });
    for (const bad of [
      { subdomain: '../acme' },
      { subdomain: 'acme/jobs' },
      { subdomain: 'acme', baseUrl: 'ftp://x' },
      { subdomain: 'acme', pageSize: 10 },
    ]) {
      expect(workableConfig.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});
