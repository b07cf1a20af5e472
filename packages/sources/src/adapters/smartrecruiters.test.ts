import { createFixtureSmartRecruiters, type FixtureSmartRecruiters } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  smartRecruitersAdapter,
  smartRecruitersConfig,
  smartRecruitersDetailUrl,
} from './smartrecruiters.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let company: FixtureSmartRecruiters;

beforeAll(async () => {
  company = await createFixtureSmartRecruiters({
    postings: 230,
    seed: 13,
    companyIdentifier: 'CopperleafEnergy',
  });
});

beforeEach(() => {
  company.resetRequests();
  company.clearFaults();
  company.setIgnoreOffset(false);
});

afterAll(async () => {
  await company.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  smartRecruitersConfig.parse({
    companyIdentifier: company.companyIdentifier,
    baseUrl: company.baseUrl,
    ...extra,
  });
const listPath = '/v1/companies/CopperleafEnergy/postings?';

describe('smartrecruiters adapter', () => {
  it('pages until offset reaches totalFound (230 in 3 pages) and follows every ref', async () => {
    const result = await smartRecruitersAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      company.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(company.requests(listPath).map((request) => request.query)).toEqual([
      { offset: '0', limit: '100' },
      { offset: '100', limit: '100' },
      { offset: '200', limit: '100' },
    ]);
    const details = company.requests().filter((request) => !request.target.startsWith(listPath));
    expect(details.map((request) => request.path)).toEqual(
      company.postings().map((posting) => new URL(posting.summary.ref as string).pathname),
    );
  });

  it('maps every documented field of every posting', async () => {
    const result = await smartRecruitersAdapter.list(config(), { fetcher });
    const mapped = result.postings.map((posting) =>
      vendorFields(smartRecruitersAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(company.postings().map((posting) => posting.expected));
    for (const key of Object.keys(mapped[0]!).filter((key) => !key.startsWith('salary'))) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
  });

  it('skips a posting unpublished between the listing and its detail', async () => {
    const gone = company.postings()[150]!;
    company.fail({
      status: 404,
      pathPrefix: `/v1/companies/CopperleafEnergy/postings/${gone.externalId}`,
    });
    const result = await smartRecruitersAdapter.list(config(), { fetcher });
    expect(result.postings).toHaveLength(229);
    expect(result.complete).toBe(true);
  });

  it('stops when the vendor ignores offset and answers the same page again', async () => {
    company.setIgnoreOffset(true);
    const result = await smartRecruitersAdapter.list(config({ pageSize: 50 }), { fetcher });
    expect(result.complete).toBe(false);
    expect(result.postings).toHaveLength(50);
    expect(company.requests(listPath)).toHaveLength(2);
  });

  it('fetches details only for what the limit or budgets let through', async () => {
    const limited = await smartRecruitersAdapter.list(config(), { fetcher }, { limit: 30 });
    expect(limited.postings.map((posting) => posting.externalId)).toEqual(
      company
        .postings()
        .slice(0, 30)
        .map((posting) => posting.externalId),
    );
    expect(limited.complete).toBe(false);
    expect(company.requests()).toHaveLength(1 + 30);

    company.resetRequests();
    const paged = await smartRecruitersAdapter.list(config({ pageSize: 40, maxPages: 2 }), {
      fetcher,
    });
    expect(paged.postings).toHaveLength(80);
    expect(paged.complete).toBe(false);
    expect(company.requests(listPath)).toHaveLength(2);
  });

  it('follows a ref only into the configured API', () => {
    const base = { baseUrl: 'https://api.smartrecruiters.com', companyIdentifier: 'Acme' };
    const own = 'https://api.smartrecruiters.com/v1/companies/Acme/postings/123';
    expect(smartRecruitersDetailUrl(base, { id: '123', ref: own })).toBe(own);
    for (const ref of [
      'http://169.254.169.254/latest/meta-data',
      'https://evil.example/v1/companies/Acme/postings/123',
      'https://api.smartrecruiters.com/admin',
      'not a url',
      null,
    ]) {
      expect(smartRecruitersDetailUrl(base, { id: '1 2', ref })).toBe(
        'https://api.smartrecruiters.com/v1/companies/Acme/postings/1%202',
      );
    }
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [null, [], { id: '1' }, { name: '' }])
      expect(smartRecruitersAdapter.mapPosting!(junk)).toBeNull();
    expect(
      smartRecruitersAdapter.mapPosting!({
        name: 'Welder',
        location: { city: 'Ghent', country: 'be', remote: 'no' },
        jobAd: 'x',
      })?.posting,
    ).toMatchObject({
      title: 'Welder',
      // One odd field is dropped, not the posting: `remote` is unreadable, the place still counts.
      location: 'Ghent, BE',
      isRemote: false,
      description: null,
    });
  });

  it('validates its config strictly, with the API limit of 100 per page', () => {
    expect(smartRecruitersConfig.parse({ companyIdentifier: 'Acme' })).toEqual({
      companyIdentifier: 'Acme',
      baseUrl: 'https://api.smartrecruiters.com',
      pageSize: 100,
      maxPages: 200,
      maxPostings: 10_000,
    });
    expect(
      smartRecruitersConfig.safeParse({ companyIdentifier: 'Acme', pageSize: 101 }).success,
    ).toBe(false);
  });
});
