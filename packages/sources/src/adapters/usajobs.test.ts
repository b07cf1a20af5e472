import { createFixtureUsaJobs, type FixtureUsaJobs } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { SOURCE_CREDENTIALS_MISSING } from './search-api.js';
import { usaJobsAdapter, usaJobsConfig } from './usajobs.js';

const fetcher = createTestFetcher();
let usajobs: FixtureUsaJobs;

beforeAll(async () => {
  usajobs = await createFixtureUsaJobs({ jobs: 240 });
});
beforeEach(() => {
  usajobs.resetRequests();
  usajobs.clearFaults();
});
afterAll(async () => {
  await usajobs.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  usaJobsConfig.parse({
    search_term: 'python developer',
    location: 'remote',
    is_remote: true,
    baseUrl: usajobs.baseUrl,
    pageSize: 20,
    ...extra,
  });
const context = () => ({
  fetcher,
  credentials: { usajobs: { apiKey: usajobs.apiKey, userAgent: usajobs.userAgent } },
});
const listError = async (...args: Parameters<typeof usaJobsAdapter.list>) =>
  usaJobsAdapter.list(...args).then(
    () => expect.unreachable('the listing should fail'),
    (error: unknown) => error as AtsRequestError,
  );

describe('usajobs adapter', () => {
  it('pages the search up to results_wanted with the documented parameters and headers', async () => {
    const expected = usajobs.matching({
      keyword: 'python developer',
      location: 'remote',
      remote: true,
    });
    expect(expected.length).toBe(80);
    const result = await usaJobsAdapter.list(config(), context(), { limit: 50 });
    expect(result.complete).toBe(false);
    expect(result.postings).toEqual(
      expected
        .slice(0, 50)
        .map((job) => ({ externalId: job.externalId, url: job.url, payload: job.payload })),
    );
    expect(usajobs.requests().map((request) => request.query)).toEqual(
      ['1', '2', '3'].map((Page) => ({
        Keyword: 'python developer',
        LocationName: 'remote',
        RemoteIndicator: 'True',
        ResultsPerPage: '20',
        Page,
      })),
    );
    expect(usajobs.keyHeaders()[0]).toEqual({
      host: new URL(usajobs.baseUrl).host,
      userAgent: 'jobs@example.test',
      authorizationKey: 'test-key',
    });
  });

  it('lists the saved search to SearchResultCountAll, complete; a run search is never complete', async () => {
    const saved = await usaJobsAdapter.list(config({ pageSize: 500 }), context());
    expect(saved.postings).toHaveLength(80);
    expect(saved.complete).toBe(true);
    const oneOff = await usaJobsAdapter.list(config(), context(), {
      search: { search_term: 'analyst' },
    });
    expect(oneOff.postings.map((posting) => posting.externalId)).toEqual(
      usajobs
        .matching({ keyword: 'analyst', location: 'remote', remote: true })
        .map((job) => job.externalId),
    );
    expect(oneOff.complete).toBe(false);
  });

  it('maps every field of every result', () => {
    const mapped = usajobs
      .jobs()
      .map((job) => vendorFields(usaJobsAdapter.mapPosting!(job.payload)?.posting));
    expect(mapped).toEqual(usajobs.jobs().map((job) => job.expected));
    expect(usaJobsAdapter.mapPosting!({ MatchedObjectDescriptor: {} })).toBeNull();
  });

  it('classes a bad key, a 400 and a missing key as permanent', async () => {
    expect(
      await listError(config(), {
        fetcher,
        credentials: { usajobs: { apiKey: 'nope', userAgent: usajobs.userAgent } },
      }),
    ).toMatchObject({ code: 'SOURCE_REQUEST_REJECTED', retryClass: 'permanent', status: 401 });
    // More than 500 a page is refused by the API; the config never asks it, a run cannot either.
    expect(await listError({ ...config(), pageSize: 501 }, context())).toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
      status: 400,
    });
    const missing = await listError(config(), {
      fetcher,
      credentials: { usajobs: { apiKey: 'k' } },
    });
    expect(missing).toMatchObject({ code: SOURCE_CREDENTIALS_MISSING, retryClass: 'permanent' });
    expect(missing.message).toContain('USAJOBS_USER_AGENT');
    expect(await listError(config(), { fetcher })).toMatchObject({
      code: SOURCE_CREDENTIALS_MISSING,
      message: expect.stringContaining('USAJOBS_API_KEY'),
    });
  });

  it('classes 429 (with its Retry-After) and 5xx as transient', async () => {
    usajobs.fail({ status: 429, retryAfter: '12' });
    expect(await listError(config(), context())).toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 12_000,
    });
    usajobs.fail({ status: 500 });
    expect(await listError(config(), context())).toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
  });
});
