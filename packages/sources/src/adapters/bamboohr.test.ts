import { createFixtureBambooHr, type FixtureBambooHr } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ListOptions } from '../types.js';
import { bambooHrAdapter, bambooHrBaseUrl, bambooHrConfig } from './bamboohr.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let site: FixtureBambooHr;

beforeAll(async () => {
  site = await createFixtureBambooHr({ postings: 40, seed: 23, company: 'copperleaf' });
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
  bambooHrConfig.parse({ company: site.company, baseUrl: site.baseUrl, ...extra });

const list = (extra: Record<string, unknown> = {}, options?: ListOptions) =>
  bambooHrAdapter.list(config(extra), { fetcher }, options);

describe('bamboohr adapter', () => {
  it('lists every position, then reads each one’s detail as its payload', async () => {
    const result = await list();
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(site.requests().map((request) => request.target)).toEqual([
      '/careers/list',
      ...site.postings().map((posting) => `/careers/${posting.externalId}/detail`),
    ]);
  });

  it('maps every documented field of every position', async () => {
    const result = await list();
    const mapped = result.postings.map((posting) =>
      vendorFields(bambooHrAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    // The careers JSON names no company, and its pay and requirements are not fields.
    const absent = ['company', 'salaryMin', 'salaryMax', 'salaryCurrency', 'salaryPeriod'];
    for (const key of Object.keys(mapped[0]!).filter(
      (key) => ![...absent, 'requirements'].includes(key),
    )) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
    const provenance = bambooHrAdapter.mapPosting!(result.postings[0]!.payload)!.provenance;
    expect(provenance).toMatchObject({ title: 'ats', description: 'ats', datePosted: 'ats' });
    expect(provenance.company).toBeUndefined();
  });

  it('reads remote from isRemote, else from locationType', () => {
    const opening = (fields: Record<string, unknown>) =>
      bambooHrAdapter.mapPosting!({ result: { jobOpening: { jobOpeningName: 'Cook', ...fields } } })
        ?.posting.isRemote;
    expect(opening({ isRemote: true, locationType: '0' })).toBe(true);
    expect(opening({ isRemote: null, locationType: '1' })).toBe(true);
    expect(opening({ isRemote: null, locationType: '2' })).toBe(false);
    expect(opening({ locationType: 0 })).toBe(false);
    expect(opening({ location: { city: 'Leeds' } })).toBe(false);
    expect(opening({})).toBeNull();
  });

  it('stops at the limit, calls no detail beyond it, and says the listing is incomplete', async () => {
    const result = await list({ maxPostings: 12 }, { limit: 20 });
    expect(result.postings.map((posting) => posting.externalId)).toEqual(
      site
        .postings()
        .slice(0, 12)
        .map((posting) => posting.externalId),
    );
    expect(result.complete).toBe(false);
    expect(site.requests()).toHaveLength(13);
  });

  it('leaves out a position closed between the listing and its detail', async () => {
    const closed = site.postings()[3]!;
    site.fail({ status: 404, pathPrefix: `/careers/${closed.externalId}/detail` });
    const result = await list();
    expect(result.postings).toHaveLength(39);
    expect(result.postings.map((posting) => posting.externalId)).not.toContain(closed.externalId);
    expect(result.complete).toBe(true);
  });

  it('lists an empty careers site as complete', async () => {
    const empty = await createFixtureBambooHr({ postings: 0 });
    try {
      const result = await bambooHrAdapter.list(
        bambooHrConfig.parse({ company: 'acme', baseUrl: empty.baseUrl }),
        { fetcher },
      );
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [
      null,
      'x',
      { jobOpeningName: 'Cook' },
      { result: { jobOpening: { jobOpeningName: ' ' } } },
      { result: [] },
    ])
      expect(bambooHrAdapter.mapPosting!(junk)).toBeNull();
    expect(
      bambooHrAdapter.mapPosting!({
        result: {
          jobOpening: {
            jobOpeningName: 'Cook',
            datePosted: 'last week',
            employmentStatusLabel: 7,
            location: 'Leeds',
            description: '  ',
          },
        },
      })?.posting,
    ).toMatchObject({
      title: 'Cook',
      datePosted: null,
      employmentType: null,
      location: null,
      description: null,
    });
  });

  it('builds the default host from the company and refuses names that are not host labels', () => {
    expect(bambooHrBaseUrl(bambooHrConfig.parse({ company: 'Acme' }))).toBe(
      'https://acme.bamboohr.com',
    );
    for (const company of ['acme.evil.example', 'a/b', '-acme', 'acme@x', ''])
      expect(bambooHrConfig.safeParse({ company }).success, company).toBe(false);
    expect(bambooHrConfig.safeParse({ company: 'acme', token: 'x' }).success).toBe(false);
    expect(bambooHrConfig.safeParse({ company: 'acme', baseUrl: 'ftp://x' }).success).toBe(false);
  });
});

/** The classes every ATS shares are in ats-errors.test.ts; BambooHR also reads a detail per position. */
describe('bamboohr detail errors', () => {
  it('a failing detail call fails the listing with its class; every detail gone is not believed', async () => {
    site.fail({ status: 429, retryAfter: '3', pathPrefix: '/careers/4' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryAfterMs: 3000,
    });
    site.fail({ malformed: 'shape', pathPrefix: '/careers/4' });
    await expect(list()).rejects.toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });

    const small = await createFixtureBambooHr({ postings: 3 });
    try {
      small.fail({ status: 404, times: 3, pathPrefix: '/careers/4' });
      await expect(
        bambooHrAdapter.list(bambooHrConfig.parse({ company: 'acme', baseUrl: small.baseUrl }), {
          fetcher,
        }),
      ).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
        retryClass: 'transient',
        message: expect.stringContaining('every detail answered 404'),
      });
    } finally {
      await small.close();
    }
  });
});
