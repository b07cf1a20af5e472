import {
  createFixtureWorkday,
  type FixtureWorkday,
  type WorkdayRequestLogEntry,
} from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { workdayAdapter, workdayBaseUrl, workdayConfig, workdaySiteFromUrl } from './workday.js';

const fetcher = createTestFetcher();
let site: FixtureWorkday;
// Above the 2,000 results one search reaches, so that only a facet split lists it all.
let large: FixtureWorkday;

beforeAll(async () => {
  site = await createFixtureWorkday({ postings: 45, seed: 41, tenant: 'copperleaf' });
  large = await createFixtureWorkday({ postings: 2100, seed: 43, tenant: 'northwind' });
});

beforeEach(() => {
  for (const fixture of [site, large]) {
    fixture.resetRequests();
    fixture.clearFaults();
    fixture.setMissing(false);
    fixture.setFacets(['locations', 'jobFamilyGroup', 'timeType']);
  }
});

afterAll(async () => {
  await site.close();
  await large.close();
  await fetcher.close();
});

const configFor = (fixture: FixtureWorkday, extra: Record<string, unknown> = {}) =>
  workdayConfig.parse({
    host: `${fixture.tenant}.wd5.myworkdayjobs.com`,
    tenant: fixture.tenant,
    site: fixture.site,
    baseUrl: fixture.baseUrl,
    ...extra,
  });

const searches = (fixture: FixtureWorkday): WorkdayRequestLogEntry[] =>
  fixture.requests().filter((request) => request.method === 'POST');

describe('workday adapter', () => {
  it('searches 20 at a time to the end, then reads each posting', async () => {
    const result = await workdayAdapter.list(configFor(site), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(searches(site).map((request) => [request.path, request.body])).toEqual(
      [0, 20, 40].map((offset) => [
        '/wday/cxs/copperleaf/External/jobs',
        { appliedFacets: {}, limit: 20, offset, searchText: '' },
      ]),
    );
    expect(site.requests().filter((request) => request.method === 'GET')).toHaveLength(45);
  });

  it('maps every documented field of every posting', async () => {
    const result = await workdayAdapter.list(configFor(site), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(workdayAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    // Workday publishes free-text locations, and no pay or requirements fields: those come from
    // the description (provenance 'description').
    const unmapped = ['locationCity', 'locationRegion'];
    for (const key of Object.keys(mapped[0]!) as (keyof NonNullable<(typeof mapped)[0]>)[]) {
      const filled = mapped.some((posting) => posting?.[key] != null);
      expect(filled, key).toBe(!unmapped.includes(key));
    }
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
    expect(new Set(mapped.map((posting) => posting?.employmentType))).toEqual(
      new Set(['FULL_TIME', 'PART_TIME', null]),
    );
  });

  // Each of these reads some 2,000 details one at a time: minutes on a loaded machine, not seconds.
  it(
    'splits a site above 2,000 results by a facet that covers it, and lists it whole',
    { timeout: 180_000 },
    async () => {
      const result = await workdayAdapter.list(configFor(large), { fetcher });
      expect(result.complete).toBe(true);
      const byId = new Map(large.postings().map((posting) => [posting.externalId, posting]));
      expect(result.postings).toHaveLength(2100);
      expect(new Set(result.postings.map((posting) => posting.externalId))).toEqual(
        new Set(byId.keys()),
      );
      for (const posting of result.postings) {
        expect(posting.payload).toEqual(byId.get(posting.externalId)?.payload);
      }
      const bodies = searches(large).map(
        (request) =>
          request.body as {
            appliedFacets: Record<string, string[]>;
            limit: number;
            offset: number;
          },
      );
      expect(searches(large).every((request) => request.status === 200)).toBe(true);
      expect(bodies.every((body) => body.limit === 20 && body.offset + body.limit <= 2000)).toBe(
        true,
      );
      // The job family covers every posting (a location does not: remote postings have none).
      expect(bodies[0]!.appliedFacets).toEqual({});
      const split = new Set(bodies.slice(1).flatMap((body) => Object.keys(body.appliedFacets)));
      expect(split).toEqual(new Set(['jobFamilyGroup']));
      // The unfiltered first page, then each family's pages, none read twice.
      const perFamily = new Map<string | undefined, number>();
      for (const posting of large.postings()) {
        const family = posting.facets.jobFamilyGroup;
        perFamily.set(family, (perFamily.get(family) ?? 0) + 1);
      }
      const familyPages = [...perFamily.values()].reduce((all, n) => all + Math.ceil(n / 20), 0);
      expect(bodies).toHaveLength(1 + familyPages);
    },
  );

  it(
    'says the listing is incomplete when no facet covers the site, keeping what it reached',
    { timeout: 180_000 },
    async () => {
      large.setFacets(['locations']);
      const byLocation = await workdayAdapter.list(configFor(large), { fetcher });
      expect(byLocation.complete).toBe(false);
      const located = large.postings().filter((posting) => posting.facets.locations !== undefined);
      expect(located.length).toBeLessThan(2100);
      expect(new Set(byLocation.postings.map((posting) => posting.externalId))).toEqual(
        new Set(located.map((posting) => posting.externalId)),
      );

      large.setFacets([]);
      large.resetRequests();
      const unsplit = await workdayAdapter.list(configFor(large), { fetcher });
      expect(unsplit.complete).toBe(false);
      expect(unsplit.postings.map((posting) => posting.externalId)).toEqual(
        large
          .postings()
          .slice(0, 2000)
          .map((posting) => posting.externalId),
      );
      expect(searches(large)).toHaveLength(100);
    },
  );

  it('stops at the page budget and at the limit, and says the listing is incomplete', async () => {
    const budget = await workdayAdapter.list(configFor(site, { maxPages: 2 }), { fetcher });
    expect(budget.postings).toHaveLength(40);
    expect(budget.complete).toBe(false);

    site.resetRequests();
    const limited = await workdayAdapter.list(configFor(site), { fetcher }, { limit: 25 });
    expect(limited.postings.map((posting) => posting.externalId)).toEqual(
      site
        .postings()
        .slice(0, 25)
        .map((posting) => posting.externalId),
    );
    expect(limited.complete).toBe(false);
    expect(searches(site)).toHaveLength(2);
    expect(site.requests().filter((request) => request.method === 'GET')).toHaveLength(25);

    const roomy = await workdayAdapter.list(configFor(site), { fetcher }, { limit: 1000 });
    expect(roomy.complete).toBe(true);
  });

  it('leaves out a posting closed between search and detail', async () => {
    const closed = site.postings()[3]!;
    site.fail({ status: 404, pathPrefix: `/wday/cxs/copperleaf/External${closed.externalId}` });
    const result = await workdayAdapter.list(configFor(site), { fetcher });
    expect(result.postings.map((posting) => posting.externalId)).not.toContain(closed.externalId);
    expect(result.postings).toHaveLength(44);
  });

  it('lists an empty site as complete', async () => {
    const empty = await createFixtureWorkday({ postings: 0 });
    try {
      const result = await workdayAdapter.list(configFor(empty), { fetcher });
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('returns null for a payload it cannot use, and reads odd fields as null', () => {
    for (const junk of [null, 'x', {}, { jobPostingInfo: { title: ' ' } }, { title: 'Cook' }]) {
      expect(workdayAdapter.mapPosting!(junk)).toBeNull();
    }
    expect(
      workdayAdapter.mapPosting!({
        jobPostingInfo: {
          title: 'Cook',
          location: 'Remote - Ireland',
          country: 'IE',
          startDate: 17,
          timeType: 'Full time',
          remoteType: null,
        },
        hiringOrganization: 'Acme',
      })?.posting,
    ).toMatchObject({
      title: 'Cook',
      company: null,
      location: 'Remote - Ireland',
      locationCountry: null,
      isRemote: true,
      employmentType: 'FULL_TIME',
      datePosted: null,
      description: null,
    });
    expect(
      workdayAdapter.mapPosting!({
        jobPostingInfo: { title: 'Baker', location: 'Berlin', remoteType: 'Flexible Remote' },
      })?.posting.isRemote,
    ).toBe(false);
  });

  it('builds the API URL from host, tenant and site; refuses identifiers that are not', () => {
    const config = workdayConfig.parse({
      host: 'acme.wd5.myworkdayjobs.com',
      tenant: 'acme',
      site: 'External_Careers',
    });
    expect(config).toMatchObject({ maxPages: 1000, maxPostings: 10_000 });
    expect(workdayBaseUrl(config)).toBe('https://acme.wd5.myworkdayjobs.com');
    for (const bad of [
      { host: 'evil.example.com', tenant: 'acme', site: 'External' },
      { host: 'acme.wd5.myworkdayjobs.com.evil.com', tenant: 'acme', site: 'External' },
      { host: 'acme.wd5.myworkdayjobs.com', tenant: '../x', site: 'External' },
      { host: 'acme.wd5.myworkdayjobs.com', tenant: 'acme', site: 'a/b' },
      { host: 'acme.wd5.myworkdayjobs.com', tenant: 'acme', site: 'x', pageSize: 50 },
    ]) {
      expect(workdayConfig.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
  it('reads host, tenant and site from a career site address', () => {
    const acme = { host: 'acme.wd5.myworkdayjobs.com', tenant: 'acme', site: 'External' };
    expect(workdaySiteFromUrl('https://acme.wd5.myworkdayjobs.com/External')).toEqual(acme);
    expect(
      workdaySiteFromUrl('https://acme.wd5.myworkdayjobs.com/en-US/External/job/Berlin/X_JR1'),
    ).toEqual(acme);
    for (const other of [
      'http://acme.wd5.myworkdayjobs.com/External',
      'https://acme.wd5.myworkdayjobs.com/',
      'https://acme.wd5.myworkdayjobs.com:8443/External',
      'https://user@acme.wd5.myworkdayjobs.com/External',
      'https://acme.example.com/External',
      'not a url',
    ]) {
      expect(workdaySiteFromUrl(other), other).toBeNull();
    }
  });
});

describe('workday errors', () => {
  const list = () => workdayAdapter.list(configFor(site), { fetcher });

  it('an unknown tenant or site is permanent: SOURCE_BOARD_NOT_FOUND', async () => {
    site.setMissing(true);
    const error = await list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AtsRequestError);
    expect(error).toMatchObject({
      code: 'SOURCE_BOARD_NOT_FOUND',
      retryClass: 'permanent',
      status: 404,
    });
    expect(site.requests()).toHaveLength(1);
  });

  it('429 and 5xx are transient, other 4xx permanent, on search and on detail', async () => {
    site.fail({ status: 429, retryAfter: '7', pathPrefix: '/wday/cxs/copperleaf/External/jobs' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 7000,
    });
    site.fail({ status: 500, pathPrefix: '/wday/cxs/copperleaf/External/job/' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
    site.fail({ status: 422 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
      status: 422,
    });
    expect(await list()).toMatchObject({ complete: true });
  });

  it('a malformed or misshapen body is SOURCE_RESPONSE_INVALID, transient', async () => {
    site.fail({ malformed: 'json' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      retryClass: 'transient',
      message: expect.stringContaining('malformed JSON'),
    });
    site.fail({ malformed: 'shape', pathPrefix: '/wday/cxs/copperleaf/External/job/' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      message: expect.stringContaining('documented shape'),
    });
    // Every detail gone is not believed: it would expire the whole site.
    site.fail({ status: 404, times: 45, pathPrefix: '/wday/cxs/copperleaf/External/job/' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      message: expect.stringContaining('every detail answered 404'),
    });
  });

  it('refuses an external path that would leave the site API', async () => {
    const hostile = await createFixtureWorkday({ postings: 1 });
    try {
      const posting = hostile.postings()[0]!;
      posting.summary.externalPath = '/job/../../../../admin';
      await expect(workdayAdapter.list(configFor(hostile), { fetcher })).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
      });
      expect(hostile.requests()).toHaveLength(1);
    } finally {
      await hostile.close();
    }
  });

  it('an unreachable API is SOURCE_FETCH_FAILED, transient', async () => {
    const gone = await createFixtureWorkday({ postings: 1 });
    await gone.close();
    await expect(workdayAdapter.list(configFor(gone), { fetcher })).rejects.toMatchObject({
      code: 'SOURCE_FETCH_FAILED',
      retryClass: 'transient',
    });
  });

  it('an aborted listing stops before its first request', async () => {
    await expect(
      workdayAdapter.list(configFor(site), { fetcher }, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(site.requests()).toHaveLength(0);
  });
});
