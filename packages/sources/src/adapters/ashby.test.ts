import { createFixtureAshby, type FixtureAshby } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ashbyAdapter, ashbyConfig } from './ashby.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let board: FixtureAshby;

beforeAll(async () => {
  board = await createFixtureAshby({ postings: 60, seed: 5, jobBoardName: 'brightwell' });
});

beforeEach(() => {
  board.resetRequests();
  board.clearFaults();
});

afterAll(async () => {
  await board.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  ashbyConfig.parse({ jobBoardName: board.jobBoardName, baseUrl: board.baseUrl, ...extra });

describe('ashby adapter', () => {
  it('lists the listed jobs of the board in one request, with compensation', async () => {
    const result = await ashbyAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      board.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(board.unlistedIds().length).toBeGreaterThan(0);
    expect(result.postings.map((posting) => posting.externalId)).not.toEqual(
      expect.arrayContaining([board.unlistedIds()[0]]),
    );
    expect(board.requests().map((request) => request.target)).toEqual([
      '/posting-api/job-board/brightwell?includeCompensation=true',
    ]);
  });

  it('maps every documented field of every job', async () => {
    const result = await ashbyAdapter.list(config(), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(ashbyAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(board.postings().map((posting) => posting.expected));
    for (const key of Object.keys(mapped[0]!).filter(
      (key) => !['company', 'requirements'].includes(key),
    )) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
    expect(
      mapped.some((posting) => posting?.location === 'Remote' && posting.locationCity === null),
    ).toBe(true);
  });

  it('prefers the summary salary, then the first tier with one; equity is not salary', () => {
    const salary = (compensation: unknown) =>
      ashbyAdapter.mapPosting!({ title: 'Engineer', compensation })!.posting;
    const equity = {
      compensationType: 'EquityPercentage',
      interval: 'NONE',
      minValue: 0.1,
      maxValue: 0.2,
    };
    expect(
      salary({
        summaryComponents: [
          equity,
          {
            compensationType: 'Salary',
            interval: '1 YEAR',
            currencyCode: 'usd',
            minValue: 90_000,
            maxValue: 150_000,
          },
        ],
        compensationTiers: [
          {
            components: [
              {
                compensationType: 'Salary',
                interval: '1 YEAR',
                currencyCode: 'USD',
                minValue: 100_000,
                maxValue: 150_000,
              },
            ],
          },
        ],
      }),
    ).toMatchObject({
      salaryMin: 90_000,
      salaryMax: 150_000,
      salaryCurrency: 'USD',
      salaryPeriod: 'year',
    });
    expect(
      salary({
        summaryComponents: [equity],
        compensationTiers: [
          { components: [equity] },
          {
            components: [
              {
                compensationType: 'Salary',
                interval: '1 HOUR',
                currencyCode: 'EUR',
                minValue: 30,
                maxValue: null,
              },
            ],
          },
        ],
      }),
    ).toMatchObject({
      salaryMin: 30,
      salaryMax: null,
      salaryCurrency: 'EUR',
      salaryPeriod: 'hour',
    });
    expect(salary({ summaryComponents: [equity], compensationTiers: [] })).toMatchObject({
      salaryMin: null,
      salaryPeriod: null,
    });
  });

  it('falls back to workplaceType, then to the location text, for remoteness', () => {
    const remote = (fields: Record<string, unknown>) =>
      ashbyAdapter.mapPosting!({ title: 'Engineer', ...fields })!.posting.isRemote;
    expect(remote({ isRemote: false, workplaceType: 'Remote' })).toBe(false);
    expect(remote({ workplaceType: 'Remote' })).toBe(true);
    expect(remote({ workplaceType: 'Hybrid', location: 'Berlin' })).toBe(false);
    expect(remote({ location: 'Remote (EU)' })).toBe(true);
    expect(remote({})).toBeNull();
  });

  it('stops at the limit and says the listing is incomplete', async () => {
    const result = await ashbyAdapter.list(config(), { fetcher }, { limit: 7 });
    expect(result.postings.map((posting) => posting.externalId)).toEqual(
      board
        .postings()
        .slice(0, 7)
        .map((posting) => posting.externalId),
    );
    expect(result.complete).toBe(false);
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [null, true, {}, { title: null }, { id: 'x', jobUrl: 'https://x' }])
      expect(ashbyAdapter.mapPosting!(junk)).toBeNull();
    expect(
      ashbyAdapter.mapPosting!({
        title: 'Engineer',
        address: 'Berlin',
        compensation: 5,
        publishedAt: 123,
      })?.provenance,
    ).toEqual({ title: 'ats' });
  });

  it('validates its config strictly, with the vendor host as the default', () => {
    expect(ashbyConfig.parse({ jobBoardName: 'acme' })).toEqual({
      jobBoardName: 'acme',
      baseUrl: 'https://api.ashbyhq.com',
      maxPostings: 10_000,
    });
    expect(
      ashbyConfig.safeParse({ jobBoardName: 'acme', includeCompensation: false }).success,
    ).toBe(false);
    expect(ashbyConfig.safeParse({ jobBoardName: 'a/b' }).success).toBe(false);
  });
});
