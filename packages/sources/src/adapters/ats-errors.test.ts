/**
 * Vendor failures, classified the same way by every ATS adapter: permanent when retrying cannot
 * help (the board does not exist), transient otherwise, each with its stable code. Workday (a
 * search by POST), Personio (XML) and Teamtailor (RSS) test the same classes in their own files,
 * against fixtures of their own shape.
 */
import {
  createFixtureAshby,
  createFixtureBambooHr,
  createFixtureBreezy,
  createFixtureGreenhouse,
  createFixtureLever,
  createFixtureRecruitee,
  createFixtureSmartRecruiters,
  createFixtureWorkable,
  type FixtureAtsServer,
} from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SourceError, type ListingResult, type ListOptions, type SiteAdapter } from '../types.js';
import { ashbyAdapter } from './ashby.js';
import { AtsRequestError } from './ats-request-error.js';
import { bambooHrAdapter } from './bamboohr.js';
import { breezyAdapter } from './breezy.js';
import { greenhouseAdapter } from './greenhouse.js';
import { leverAdapter } from './lever.js';
import { recruiteeAdapter } from './recruitee.js';
import { smartRecruitersAdapter } from './smartrecruiters.js';
import { workableAdapter } from './workable.js';
import { createTestFetcher } from './mapping.test-support.js';

const fetcher = createTestFetcher();

type Fixture = FixtureAtsServer & { setMissing(missing: boolean): void };

interface Vendor {
  name: string;
  start(): Promise<Fixture>;
  adapter: SiteAdapter;
  config(fixture: Fixture): Record<string, unknown>;
  /** Path prefix of a per-posting detail call, when the adapter makes them. */
  detailPrefix?: string;
}

const vendors: Vendor[] = [
  {
    name: 'greenhouse',
    start: () => createFixtureGreenhouse({ postings: 5 }),
    adapter: greenhouseAdapter,
    config: (fixture) => ({ boardToken: 'acme', baseUrl: fixture.baseUrl, payRanges: true }),
    detailPrefix: '/v1/boards/acme/jobs/',
  },
  {
    name: 'lever',
    start: () => createFixtureLever({ postings: 5 }),
    adapter: leverAdapter,
    config: (fixture) => ({ site: 'acme', baseUrl: fixture.baseUrl }),
  },
  {
    name: 'ashby',
    start: () => createFixtureAshby({ postings: 5 }),
    adapter: ashbyAdapter,
    config: (fixture) => ({ jobBoardName: 'acme', baseUrl: fixture.baseUrl }),
  },
  {
    name: 'smartrecruiters',
    start: () => createFixtureSmartRecruiters({ postings: 5 }),
    adapter: smartRecruitersAdapter,
    config: (fixture) => ({ companyIdentifier: 'Acme', baseUrl: fixture.baseUrl }),
    detailPrefix: '/v1/companies/Acme/postings/',
  },
  {
    name: 'recruitee',
    start: () => createFixtureRecruitee({ postings: 5 }),
    adapter: recruiteeAdapter,
    config: (fixture) => ({ company: 'acme', baseUrl: fixture.baseUrl }),
  },
  {
    name: 'workable',
    start: () => createFixtureWorkable({ postings: 5 }),
    adapter: workableAdapter,
    config: (fixture) => ({ subdomain: 'acme', baseUrl: fixture.baseUrl }),
  },
  {
    name: 'bamboohr',
    start: () => createFixtureBambooHr({ postings: 5 }),
    adapter: bambooHrAdapter,
    config: (fixture) => ({ company: 'acme', baseUrl: fixture.baseUrl }),
  },
  {
    name: 'breezy',
    start: () => createFixtureBreezy({ postings: 5 }),
    adapter: breezyAdapter,
    config: (fixture) => ({ company: 'acme', baseUrl: fixture.baseUrl }),
  },
];

afterAll(async () => {
  await fetcher.close();
});

describe.each(vendors)('$name errors', (vendor) => {
  let fixture: Fixture;
  const list = (options?: ListOptions): Promise<ListingResult> =>
    vendor.adapter.list(
      vendor.adapter.configSchema.parse(vendor.config(fixture)),
      { fetcher },
      options,
    );

  beforeAll(async () => {
    fixture = await vendor.start();
  });

  beforeEach(() => {
    fixture.clearFaults();
    fixture.resetRequests();
    fixture.setMissing(false);
  });

  afterAll(async () => {
    await fixture.close();
  });

  it('a missing board is permanent: SOURCE_BOARD_NOT_FOUND', async () => {
    fixture.setMissing(true);
    const error = await list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AtsRequestError);
    expect(error).toBeInstanceOf(SourceError);
    expect(error).toMatchObject({
      code: 'SOURCE_BOARD_NOT_FOUND',
      retryClass: 'permanent',
      status: 404,
    });
    expect(fixture.requests()).toHaveLength(1);
  });

  it('429 is transient and keeps Retry-After: SOURCE_RATE_LIMITED', async () => {
    fixture.fail({ status: 429, retryAfter: '7' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      status: 429,
      retryAfterMs: 7000,
    });
  });

  it('5xx is transient: SOURCE_UPSTREAM_UNAVAILABLE, for the next N requests only', async () => {
    fixture.fail({ status: 500, times: 2 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
      status: 500,
    });
    fixture.fail({ status: 503, retryAfter: '2' }); // queued behind the remaining 500
    await expect(list()).rejects.toMatchObject({ status: 500 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      status: 503,
      retryAfterMs: 2000,
    });
    const recovered = await list();
    expect(recovered).toMatchObject({ complete: true });
    expect(recovered.postings).toHaveLength(5);
  });

  it('malformed JSON is SOURCE_RESPONSE_INVALID, transient', async () => {
    fixture.fail({ malformed: 'json' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      retryClass: 'transient',
      message: expect.stringContaining('malformed JSON'),
    });
  });

  it('JSON without the documented shape is SOURCE_RESPONSE_INVALID, transient', async () => {
    fixture.fail({ malformed: 'shape' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      retryClass: 'transient',
      message: expect.stringContaining('documented shape'),
    });
  });

  it('another 4xx is permanent: SOURCE_REQUEST_REJECTED', async () => {
    fixture.fail({ status: 403 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
      status: 403,
    });
  });

  // Only vendors whose listing follows a per-posting detail call have this failure mode.
  const detailPrefix = vendor.detailPrefix;
  if (detailPrefix !== undefined) {
    it('a failing detail call fails the listing with its class', async () => {
      fixture.fail({ status: 429, retryAfter: '3', pathPrefix: detailPrefix });
      await expect(list()).rejects.toMatchObject({
        code: 'SOURCE_RATE_LIMITED',
        retryClass: 'transient',
        retryAfterMs: 3000,
      });
      fixture.fail({ malformed: 'json', pathPrefix: detailPrefix });
      await expect(list()).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
        retryClass: 'transient',
      });
      // One closed posting is left out; all of them gone is not believed (it would expire all).
      fixture.fail({ status: 404, times: 5, pathPrefix: detailPrefix });
      await expect(list()).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
        retryClass: 'transient',
        message: expect.stringContaining('every detail answered 404'),
      });
    });
  }

  it('an unreachable API is SOURCE_FETCH_FAILED, transient', async () => {
    const gone = await vendor.start();
    await gone.close();
    const config = vendor.adapter.configSchema.parse(vendor.config(gone));
    await expect(vendor.adapter.list(config, { fetcher })).rejects.toMatchObject({
      code: 'SOURCE_FETCH_FAILED',
      retryClass: 'transient',
    });
  });

  it('an aborted listing stops before its next request', async () => {
    await expect(list({ signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(fixture.requests()).toHaveLength(0);
  });
});
