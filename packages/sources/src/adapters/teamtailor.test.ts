import { createFixtureTeamtailor, type FixtureTeamtailor } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ListOptions } from '../types.js';
import { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import {
  parseTeamtailorFeed,
  teamtailorAdapter,
  teamtailorBaseUrl,
  teamtailorConfig,
} from './teamtailor.js';

const fetcher = createTestFetcher();
let site: FixtureTeamtailor;

beforeAll(async () => {
  site = await createFixtureTeamtailor({ postings: 50, seed: 31, company: 'northwind' });
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
  teamtailorConfig.parse({ company: site.company, baseUrl: site.baseUrl, ...extra });

const list = (extra: Record<string, unknown> = {}, options?: ListOptions) =>
  teamtailorAdapter.list(config(extra), { fetcher }, options);

const request = {
  vendor: 'Teamtailor',
  url: 'https://acme.teamtailor.com/jobs.rss',
  notFound: 'board',
} as const;

describe('teamtailor adapter', () => {
  it('lists every job of the RSS feed in one request, each item as its payload', async () => {
    const result = await list();
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      site.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    expect(site.requests().map((entry) => entry.target)).toEqual(['/jobs.rss']);
  });

  it('maps every field the feed carries, for every job', async () => {
    const result = await list();
    const mapped = result.postings.map((posting) =>
      vendorFields(teamtailorAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(site.postings().map((posting) => posting.expected));
    // The feed has no region, employment type, pay or requirements.
    const absent = [
      'locationRegion',
      'employmentType',
      'salaryMin',
      'salaryMax',
      'salaryCurrency',
      'salaryPeriod',
      'requirements',
    ];
    for (const key of Object.keys(mapped[0]!).filter((key) => !absent.includes(key))) {
      expect(
        mapped.some((posting) => posting?.[key as keyof typeof posting] != null),
        key,
      ).toBe(true);
    }
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
  });

  it('reads RFC 822 and ISO dates, remote statuses, and a location known only by its label', () => {
    const map = (fields: Record<string, unknown>) =>
      teamtailorAdapter.mapPosting!({ title: 'Cook', ...fields })?.posting;
    expect(map({ pubDate: 'Wed, 13 May 2026 17:12:26 +0200' })?.datePosted).toBe(
      '2026-05-13T15:12:26.000Z',
    );
    expect(map({ pubDate: '2026-05-13T17:12:26+02:00' })?.datePosted).toBe(
      '2026-05-13T15:12:26.000Z',
    );
    expect(map({ pubDate: 'Someday' })?.datePosted).toBeNull();
    expect(map({ remoteStatus: 'temporary' })?.isRemote).toBe(true);
    expect(map({ remoteStatus: 'hybrid' })?.isRemote).toBe(false);
    expect(map({ remoteStatus: 'none' })?.isRemote).toBe(false);
    expect(map({})?.isRemote).toBeNull();
    expect(
      map({ locations: [{ name: 'HQ, Stockholm', city: null, country: null }] }),
    ).toMatchObject({ location: 'HQ, Stockholm', locationCity: null, isRemote: false });
  });

  it('parses namespaced elements, CDATA and escaped HTML, and refuses what is not a feed', () => {
    const items = parseTeamtailorFeed(
      `<?xml version="1.0"?><rss version="2.0" xmlns:tt="https://teamtailor.com/locations"><channel>
        <title>Acme &amp; Co</title>
        <item><title>Fish &amp; chips</title><link> https://acme.teamtailor.com/jobs/1-fish </link>
          <description>&lt;p&gt;Hot &amp;amp;mdash; fresh&lt;/p&gt;</description>
          <tt:locations><tt:location><tt:name>HQ</tt:name><tt:city>Oslo</tt:city><tt:country>Norway</tt:country></tt:location></tt:locations>
          <tt:department>Kitchen</tt:department></item>
        <item><title>Baker</title><link>https://acme.teamtailor.com/jobs/2-baker</link><guid>g-2</guid>
          <description><![CDATA[<p>Bread &mdash; <b>early</b></p>]]></description></item>
      </channel></rss>`,
      request,
    );
    expect(items).toEqual([
      {
        guid: null,
        title: 'Fish & chips',
        link: 'https://acme.teamtailor.com/jobs/1-fish',
        description: '<p>Hot &amp;mdash; fresh</p>',
        pubDate: null,
        remoteStatus: null,
        department: 'Kitchen',
        locations: [{ name: 'HQ', city: 'Oslo', country: 'Norway' }],
        company: 'Acme & Co',
      },
      {
        guid: 'g-2',
        title: 'Baker',
        link: 'https://acme.teamtailor.com/jobs/2-baker',
        description: '<p>Bread &mdash; <b>early</b></p>',
        pubDate: null,
        remoteStatus: null,
        department: null,
        locations: [],
        company: 'Acme & Co',
      },
    ]);
    for (const body of ['{"jobs": []}', '<html><body>Maintenance</body></html>', ''])
      expect(() => parseTeamtailorFeed(body, request), body).toThrow(
        expect.objectContaining({ code: 'SOURCE_RESPONSE_INVALID', retryClass: 'transient' }),
      );
    expect(() =>
      parseTeamtailorFeed(
        '<rss><channel><item><title>X</title><link>javascript:alert(1)</link></item></channel></rss>',
        request,
      ),
    ).toThrow(/documented shape/);
  });

  it('refuses a feed nested past 64 elements in time linear in its size', () => {
    const feed = (depth: number) =>
      `<rss><channel><item><title>X</title><link>https://acme.teamtailor.com/jobs/1</link><description>${'<a>'.repeat(depth)}</description></item></channel></rss>`;
    // An item whose description nests escaped markup as real elements, 58 deep: still a feed.
    expect(parseTeamtailorFeed(feed(58), request)).toHaveLength(1);
    // 1 MB of unclosed `<a>`: refused after the 65th, without building the tree (minutes before).
    const cpuBefore = process.cpuUsage();
    expect(() => parseTeamtailorFeed(feed(350_000), request)).toThrow(
      expect.objectContaining({
        code: 'SOURCE_RESPONSE_INVALID',
        message: expect.stringMatching(/nested more than 64 deep/),
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(1_000);
  });

  it('stops at the limit and says the listing is incomplete', async () => {
    const result = await list({ maxPostings: 12 }, { limit: 20 });
    expect(result.postings).toHaveLength(12);
    expect(result.complete).toBe(false);
  });

  it('lists an empty feed as complete', async () => {
    const empty = await createFixtureTeamtailor({ postings: 0 });
    try {
      const result = await teamtailorAdapter.list(
        teamtailorConfig.parse({ company: 'acme', baseUrl: empty.baseUrl }),
        { fetcher },
      );
      expect(result).toEqual({ postings: [], complete: true });
    } finally {
      await empty.close();
    }
  });

  it('returns null for a payload it cannot use', () => {
    for (const junk of [null, '<item/>', { link: 'https://x' }, { title: ' ' }])
      expect(teamtailorAdapter.mapPosting!(junk)).toBeNull();
    expect(
      teamtailorAdapter.mapPosting!({ title: 'Cook', locations: 'Oslo', company: ['x'] })?.posting,
    ).toMatchObject({ title: 'Cook', location: null, company: null });
  });

  it('builds the default host from the company and takes a custom career domain', () => {
    expect(teamtailorBaseUrl(teamtailorConfig.parse({ company: 'Acme' }))).toBe(
      'https://acme.teamtailor.com',
    );
    expect(
      teamtailorBaseUrl(
        teamtailorConfig.parse({ company: 'acme', baseUrl: 'https://careers.acme.example/' }),
      ),
    ).toBe('https://careers.acme.example/');
    for (const company of ['acme.evil.example', 'a/b', '-acme', 'acme@x', ''])
      expect(teamtailorConfig.safeParse({ company }).success, company).toBe(false);
    expect(teamtailorConfig.safeParse({ company: 'acme', apiKey: 'secret' }).success).toBe(false);
  });
});

describe('teamtailor errors', () => {
  it('a missing career site is permanent: SOURCE_BOARD_NOT_FOUND', async () => {
    site.setMissing(true);
    const error = await list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AtsRequestError);
    expect(error).toMatchObject({
      code: 'SOURCE_BOARD_NOT_FOUND',
      retryClass: 'permanent',
      status: 404,
    });
  });

  it('429 and 5xx are transient, 401 permanent', async () => {
    site.fail({ status: 429, retryAfter: '7' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 7000,
    });
    site.fail({ status: 502 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
    site.fail({ status: 401 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
    });
  });

  it('a body that is not an RSS feed is SOURCE_RESPONSE_INVALID, transient', async () => {
    for (const malformed of ['json', 'shape'] as const) {
      site.fail({ malformed });
      await expect(list()).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
        retryClass: 'transient',
        message: expect.stringContaining('not an RSS feed'),
      });
    }
  });

  it('an unreachable site is SOURCE_FETCH_FAILED; an aborted listing sends nothing', async () => {
    const gone = await createFixtureTeamtailor({ postings: 1 });
    await gone.close();
    await expect(
      teamtailorAdapter.list(teamtailorConfig.parse({ company: 'acme', baseUrl: gone.baseUrl }), {
        fetcher,
      }),
    ).rejects.toMatchObject({ code: 'SOURCE_FETCH_FAILED', retryClass: 'transient' });
    await expect(list({}, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(site.requests()).toHaveLength(0);
  });
});
