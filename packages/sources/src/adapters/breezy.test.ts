import { createFixtureBreezy, type FixtureBreezy } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ListOptions } from '../types.js';
import { breezyAdapter, breezyBaseUrl, breezyConfig } from './breezy.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let site: FixtureBreezy;

beforeAll(async () => {
  site = await createFixtureBreezy({ postings: 60, seed: 29, company: 'brightwell' });
});

beforeEach(() => {
  site.resetRequests();
  site.clearFaults();
  site.setMissing(false);
});

afterAll(async () => {
  await site.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  breezyConfig.parse({ company: site.company, baseUrl: site.baseUrl, ...extra });

const list = (extra: Record<string, unknown> = {}, options?: ListOptions) =>
  breezyAdapter.list(config(extra), { fetcher }, options);

describe('breezy adapter', () => {
  it('lists every position with its description in one verbose request', async () => {
    const result = await list();
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(site.requests().map((request) => request.target)).toEqual(['/json?verbose=true']);
  });

  it('maps every documented field of every position', async () => {
    const result = await list();
    const mapped = result.postings.map((posting) =>
      vendorFields(breezyAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    // `salary` is free text, and there is no requirements field.
    const absent = ['salaryMin', 'salaryMax', 'salaryCurrency', 'salaryPeriod', 'requirements'];
    for (const key of Object.keys(mapped[0]!).filter((key) => !absent.includes(key))) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
  });

  it('reads a state written as an object or a string, and falls back to the location name', () => {
    const map = (location: unknown) =>
      breezyAdapter.mapPosting!({ name: 'Cook', location })?.posting;
    expect(
      map({
        city: 'Austin',
        state: { id: 'TX', name: 'Texas' },
        country: { id: 'us', name: 'United States' },
      }),
    ).toMatchObject({ location: 'Austin, Texas, US', locationRegion: 'Texas', isRemote: false });
    expect(map({ city: 'Austin', state: 'TX', country: 'United States' })).toMatchObject({
      location: 'Austin, TX, United States',
    });
    expect(map({ name: 'Anywhere in Europe', is_remote: true })).toMatchObject({
      location: 'Anywhere in Europe',
      locationCity: null,
      isRemote: true,
    });
    expect(map(null)).toMatchObject({ location: null, isRemote: null });
  });

  it('stops at the limit and says the listing is incomplete', async () => {
    const result = await list({ maxPostings: 12 }, { limit: 20 });
    expect(result.postings).toHaveLength(12);
    expect(result.complete).toBe(false);
    const roomy = await list({}, { limit: 60 });
    expect(roomy.complete).toBe(true);
  });

  it('lists an empty careers site as complete', async () => {
    const empty = await createFixtureBreezy({ postings: 0 });
    try {
      const result = await breezyAdapter.list(
        breezyConfig.parse({ company: 'acme', baseUrl: empty.baseUrl }),
        { fetcher },
      );
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [null, [], { id: 'abc', url: 'https://x' }, { name: '' }])
      expect(breezyAdapter.mapPosting!(junk)).toBeNull();
    expect(
      breezyAdapter.mapPosting!({
        name: 'Cook',
        published_date: 'soon',
        type: 'full',
        company: { name: 42 },
      })?.posting,
    ).toMatchObject({ title: 'Cook', datePosted: null, employmentType: null, company: null });
  });

  it('builds the default host from the company and refuses names that are not host labels', () => {
    expect(breezyBaseUrl(breezyConfig.parse({ company: 'Acme' }))).toBe('https://acme.breezy.hr');
    for (const company of ['acme.evil.example', 'a/b', '-acme', 'acme@x', ''])
      expect(breezyConfig.safeParse({ company }).success, company).toBe(false);
    expect(breezyConfig.safeParse({ company: 'acme', maxPostings: 0 }).success).toBe(false);
  });
});
