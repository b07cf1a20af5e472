import { createFixtureGreenhouse, type FixtureGreenhouse } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { greenhouseAdapter, greenhouseConfig } from './greenhouse.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';

const fetcher = createTestFetcher();
let board: FixtureGreenhouse;

beforeAll(async () => {
  board = await createFixtureGreenhouse({ postings: 40, seed: 7, boardToken: 'northwind' });
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
  greenhouseConfig.parse({ boardToken: board.boardToken, baseUrl: board.baseUrl, ...extra });

describe('greenhouse adapter', () => {
  it('lists the whole board in one request, each posting with its payload', async () => {
    const result = await greenhouseAdapter.list(config(), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      board.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(board.requests().map((request) => request.target)).toEqual([
      '/v1/boards/northwind/jobs?content=true',
    ]);
  });

  it('maps every documented field of every posting', async () => {
    const result = await greenhouseAdapter.list(config(), { fetcher });
    const expected = board.postings().map((posting) => posting.expected);
    const mapped = result.postings.map((posting) =>
      vendorFields(greenhouseAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(expected);
    // The fixture exercises each field somewhere: no field is null in every record.
    for (const key of Object.keys(expected[0]!).filter(
      (key) =>
        !key.startsWith('salary') &&
        !['locationCity', 'locationRegion', 'locationCountry'].includes(key),
    )) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
  });

  it('decodes the entity-encoded content exactly one level', () => {
    const payload = {
      title: 'Chef',
      content:
        '&lt;p&gt;Fish &amp;amp; chips&amp;nbsp;&amp;mdash; &amp;lt;b&amp;gt; &#39;fresh&#39;&lt;/p&gt;',
    };
    expect(greenhouseAdapter.mapPosting!(payload)?.posting.description).toBe(
      "<p>Fish &amp; chips&nbsp;&mdash; &lt;b&gt; 'fresh'</p>",
    );
  });

  it('records provenance for the non-null fields only, "description" for what the text gave', () => {
    // A posting whose description states pay and lists requirements.
    const posting = board
      .postings()
      .find((entry) => entry.spec.descriptionSalary !== null && entry.spec.requirements.length > 0);
    const result = greenhouseAdapter.mapPosting!(posting!.payload)!;
    const nonNull = Object.entries(result.posting)
      .filter(([, value]) => value !== null)
      .map(([key]) => key);
    expect(Object.keys(result.provenance).sort()).toEqual(nonNull.sort());
    const fromText = ['salaryMin', 'salaryMax', 'salaryCurrency', 'salaryPeriod', 'requirements'];
    for (const [key, source] of Object.entries(result.provenance))
      expect(source, key).toBe(fromText.includes(key) ? 'description' : 'ats');

    // With pay ranges the salary is the vendor's own field.
    const withPay = greenhouseAdapter.mapPosting!(posting!.detailWithPay)!;
    expect(withPay.provenance.salaryMin).toBe('ats');
    expect(withPay.provenance.requirements).toBe('description');
  });

  it('calls the single-job endpoint for pay ranges when asked, and maps the salary', async () => {
    const result = await greenhouseAdapter.list(config({ payRanges: true }), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings.map((posting) => posting.payload)).toEqual(
      board.postings().map((posting) => posting.detailWithPay),
    );
    expect(
      result.postings.map((posting) =>
        vendorFields(greenhouseAdapter.mapPosting!(posting.payload)?.posting),
      ),
    ).toEqual(board.postings().map((posting) => posting.expectedWithPay));
    expect(
      result.postings.some(
        (posting) =>
          greenhouseAdapter.mapPosting!(posting.payload)?.posting.salaryPeriod === 'hour',
      ),
    ).toBe(true);
    const detailCalls = board
      .requests()
      .filter((request) => request.query.pay_transparency === 'true');
    expect(detailCalls).toHaveLength(40);
  });

  it('skips a posting whose detail is gone by the time it is fetched', async () => {
    const gone = board.postings()[3]!;
    board.fail({ status: 404, pathPrefix: `/v1/boards/northwind/jobs/${gone.externalId}` });
    const result = await greenhouseAdapter.list(config({ payRanges: true }), { fetcher });
    expect(result.postings).toHaveLength(39);
    expect(result.postings.map((posting) => posting.externalId)).not.toContain(gone.externalId);
    expect(result.complete).toBe(true);
  });

  it('falls back to per-job details when the board with content outgrows the body cap', async () => {
    const small = createTestFetcher({ maxBodyBytes: 60_000 });
    try {
      const result = await greenhouseAdapter.list(config(), { fetcher: small });
      expect(result.complete).toBe(true);
      expect(
        board
          .requests()
          .map((request) => request.target)
          .slice(0, 2),
      ).toEqual(['/v1/boards/northwind/jobs?content=true', '/v1/boards/northwind/jobs']);
      expect(
        result.postings.map((posting) =>
          vendorFields(greenhouseAdapter.mapPosting!(posting.payload)?.posting),
        ),
      ).toEqual(board.postings().map((posting) => posting.expected));
    } finally {
      await small.close();
    }
  });

  it('stops at the limit and says the listing is incomplete', async () => {
    const result = await greenhouseAdapter.list(config(), { fetcher }, { limit: 10 });
    expect(result.postings.map((posting) => posting.externalId)).toEqual(
      board
        .postings()
        .slice(0, 10)
        .map((posting) => posting.externalId),
    );
    expect(result.complete).toBe(false);
    const budget = await greenhouseAdapter.list(config({ maxPostings: 5, payRanges: true }), {
      fetcher,
    });
    expect(budget.postings).toHaveLength(5);
    expect(budget.complete).toBe(false);
    expect(
      board.requests().filter((request) => request.query.pay_transparency === 'true'),
    ).toHaveLength(5);
  });

  it('returns null for a payload it cannot use, and tolerates odd optional fields', () => {
    for (const junk of [null, 'job', 42, [], {}, { title: '   ' }, { title: 7 }]) {
      expect(greenhouseAdapter.mapPosting!(junk)).toBeNull();
    }
    const odd = greenhouseAdapter.mapPosting!({
      title: ' Chef ',
      location: 'Paris',
      metadata: 'x',
      pay_input_ranges: [{ min_cents: 'a lot' }],
      first_published: 'soon',
    });
    expect(odd?.posting).toMatchObject({
      title: 'Chef',
      location: null,
      employmentType: null,
      salaryMin: null,
      salaryPeriod: null,
      datePosted: null,
    });
    expect(odd?.provenance).toEqual({ title: 'ats' });
  });

  it('validates its config strictly, with the vendor host as the default', () => {
    expect(greenhouseConfig.parse({ boardToken: 'acme' })).toEqual({
      boardToken: 'acme',
      baseUrl: 'https://boards-api.greenhouse.io',
      payRanges: false,
      maxPostings: 10_000,
    });
    const bad = greenhouseConfig.safeParse({
      boardToken: '../admin',
      baseUrl: 'file:///etc/passwd',
      extra: true,
    });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((issue) => issue.path.join('.') || issue.code)).toEqual(
      expect.arrayContaining(['boardToken', 'baseUrl']),
    );
  });
});
