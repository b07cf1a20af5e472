import { createFixtureRemotive, type FixtureRemotive } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { remotiveAdapter, remotiveConfig } from './remotive.js';

const fetcher = createTestFetcher();
let remotive: FixtureRemotive;

beforeAll(async () => {
  remotive = await createFixtureRemotive({ jobs: 240 });
});
beforeEach(() => {
  remotive.resetRequests();
  remotive.clearFaults();
});
afterAll(async () => {
  await remotive.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  remotiveConfig.parse({ search_term: 'python developer', baseUrl: remotive.baseUrl, ...extra });
const listError = async (...args: Parameters<typeof remotiveAdapter.list>) =>
  remotiveAdapter.list(...args).then(
    () => expect.unreachable('the listing should fail'),
    (error: unknown) => error as AtsRequestError,
  );

describe('remotive adapter', () => {
  it('asks for results_wanted in one request (Remotive does not page), incomplete when capped', async () => {
    const expected = remotive.matching({ search: 'python developer' });
    expect(expected.length).toBe(80);
    const result = await remotiveAdapter.list(config(), { fetcher }, { limit: 50 });
    expect(result.postings).toEqual(
      expected
        .slice(0, 50)
        .map((job) => ({ externalId: job.externalId, url: job.url, payload: job.payload })),
    );
    expect(result.complete).toBe(false);
    expect(remotive.requests().map((request) => [request.path, request.query])).toEqual([
      ['/api/remote-jobs', { search: 'python developer', limit: '50' }],
    ]);
  });

  it('lists every match of the saved search, complete; a run search is never complete', async () => {
    const saved = await remotiveAdapter.list(config(), { fetcher });
    expect(saved.postings).toHaveLength(80);
    expect(saved.complete).toBe(true);
    const oneOff = await remotiveAdapter.list(
      config(),
      { fetcher },
      { search: { search_term: 'data analyst' } },
    );
    expect(remotive.requests()[1]!.query).toEqual({ search: 'data analyst', limit: '10000' });
    expect(oneOff.postings).toHaveLength(remotive.matching({ search: 'data analyst' }).length);
    expect(oneOff.complete).toBe(false);
  });

  it('keeps jobs open to a named location (Remotive has no location parameter)', async () => {
    const result = await remotiveAdapter.list(
      config({ location: 'USA' }),
      { fetcher },
      { limit: 10 },
    );
    expect(remotive.requests()[0]!.query).toEqual({ search: 'python developer' });
    expect(result.postings).toHaveLength(10);
    const none = await remotiveAdapter.list(config({ is_remote: false }), { fetcher });
    expect(none.postings).toEqual([]);
  });

  it('maps every field of every job', () => {
    const mapped = remotive
      .jobs()
      .map((job) => vendorFields(remotiveAdapter.mapPosting!(job.payload)?.posting));
    expect(mapped).toEqual(remotive.jobs().map((job) => job.expected));
    expect(remotiveAdapter.mapPosting!({ title: ' ' })).toBeNull();
  });

  it('classes 400 as permanent, 429 (with its Retry-After) and 5xx as transient', async () => {
    remotive.fail({ status: 400 });
    expect(await listError(config(), { fetcher })).toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
    });
    remotive.fail({ status: 429, retryAfter: '60' });
    expect(await listError(config(), { fetcher })).toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 60_000,
    });
    remotive.fail({ status: 502 });
    expect(await listError(config(), { fetcher })).toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
  });
});
