import { createFixtureAdzuna, type FixtureAdzuna } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adzunaAdapter, adzunaConfig } from './adzuna.js';
import { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { SOURCE_CREDENTIALS_MISSING } from './search-api.js';

const fetcher = createTestFetcher();
let adzuna: FixtureAdzuna;

beforeAll(async () => {
  adzuna = await createFixtureAdzuna({ jobs: 240 });
});
beforeEach(() => {
  adzuna.resetRequests();
  adzuna.clearFaults();
});
afterAll(async () => {
  await adzuna.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  adzunaConfig.parse({
    search_term: 'python developer',
    country: 'us',
    baseUrl: adzuna.baseUrl,
    pageSize: 20,
    ...extra,
  });
const context = () => ({
  fetcher,
  credentials: { adzuna: { appId: adzuna.appId, appKey: adzuna.appKey } },
});
const listError = async (...args: Parameters<typeof adzunaAdapter.list>) =>
  adzunaAdapter.list(...args).then(
    () => expect.unreachable('the listing should fail'),
    (error: unknown) => error as AtsRequestError,
  );

describe('adzuna adapter', () => {
  it('pages the saved search up to results_wanted, sending the search and keys as documented', async () => {
    const expected = adzuna.matching({ what: 'python developer' });
    expect(expected.length).toBe(120);
    const result = await adzunaAdapter.list(config(), context(), { limit: 50 });
    expect(result.complete).toBe(false);
    expect(result.postings).toEqual(
      expected
        .slice(0, 50)
        .map((job) => ({ externalId: job.externalId, url: job.url, payload: job.payload })),
    );
    expect(adzuna.requests().map((request) => [request.path, request.query])).toEqual(
      [1, 2, 3].map((page) => [
        `/v1/api/jobs/us/search/${page}`,
        {
          app_id: 'test-app',
          app_key: 'test-key',
          results_per_page: '20',
          what: 'python developer',
        },
      ]),
    );
  });

  it('lists the whole saved search to its count, complete; a run search overrides it, never complete', async () => {
    const saved = await adzunaAdapter.list(config({ location: 'Austin' }), context());
    const matches = adzuna.matching({ what: 'python developer', where: 'Austin' });
    expect(matches.length).toBeGreaterThan(0);
    expect(saved.postings.map((posting) => posting.externalId)).toEqual(
      matches.map((job) => job.externalId),
    );
    expect(saved.complete).toBe(true);

    adzuna.resetRequests();
    const oneOff = await adzunaAdapter.list(config({ location: 'Austin' }), context(), {
      search: { search_term: 'frontend', location: 'Denver' },
    });
    expect(adzuna.requests()[0]!.query).toMatchObject({ what: 'frontend', where: 'Denver' });
    expect(oneOff.postings.map((posting) => posting.externalId)).toEqual(
      adzuna.matching({ what: 'frontend', where: 'Denver' }).map((job) => job.externalId),
    );
    expect(oneOff.complete).toBe(false);
  });

  it('keeps only results that say remote when is_remote is set (Adzuna has no such filter)', async () => {
    const result = await adzunaAdapter.list(config({ is_remote: true }), context(), { limit: 30 });
    expect(result.postings).toHaveLength(30);
    for (const posting of result.postings)
      expect(adzunaAdapter.mapPosting!(posting.payload)?.posting.isRemote).toBe(true);
    expect(adzuna.requests()[0]!.query).not.toHaveProperty('remote');
  });

  it('maps every field of every result', () => {
    const mapped = adzuna
      .jobs()
      .map((job) => vendorFields(adzunaAdapter.mapPosting!(job.payload)?.posting));
    expect(mapped).toEqual(adzuna.jobs().map((job) => job.expected));
    expect(adzunaAdapter.mapPosting!(adzuna.jobs()[1]!.payload)?.provenance.title).toBe('ats');
    expect(adzunaAdapter.mapPosting!({ id: '1' })).toBeNull();
  });

  it('classes a bad key, a 400 and a missing key as permanent', async () => {
    const badKey = await listError(config(), {
      fetcher,
      credentials: { adzuna: { appId: 'test-app', appKey: 'wrong' } },
    });
    expect(badKey).toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
      status: 401,
    });
    // The key never reaches an error message or its URL.
    expect(badKey.message).not.toContain('wrong');
    expect(badKey.url).not.toContain('app_key');

    const badCountry = await listError({ ...config(), country: 'xx' as 'us' }, context());
    expect(badCountry).toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
      status: 400,
    });

    adzuna.resetRequests();
    const missing = await listError(config(), {
      fetcher,
      credentials: { adzuna: { appId: 'test-app' } },
    });
    expect(missing).toMatchObject({ code: SOURCE_CREDENTIALS_MISSING, retryClass: 'permanent' });
    expect(missing.message).toContain('ADZUNA_APP_KEY');
    expect(adzuna.requests()).toHaveLength(0);
  });

  it('classes 429 (with its Retry-After) and 5xx as transient', async () => {
    adzuna.fail({ status: 429, retryAfter: '30' });
    expect(await listError(config(), context())).toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 30_000,
    });
    adzuna.fail({ status: 503 });
    expect(await listError(config(), context())).toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
    adzuna.fail({ malformed: 'json' });
    expect(await listError(config(), context())).toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });
  });

  it('validates its config, with the API limit of 50 a page', () => {
    expect(adzunaConfig.parse({ search_term: 'nurse' })).toEqual({
      search_term: 'nurse',
      country: 'gb',
      baseUrl: 'https://api.adzuna.com',
      pageSize: 50,
      maxPages: 20,
      maxPostings: 10_000,
    });
    expect(adzunaConfig.safeParse({ pageSize: 51 }).success).toBe(false);
    expect(adzunaConfig.safeParse({ app_key: 'x' }).success).toBe(false);
  });
});
