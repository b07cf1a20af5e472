/**
 * A career site registered with nothing but its URL, scraped through the real scrape → crawl →
 * extract path: robots.txt names a sitemap index, the index a gzipped sitemap and a plain one,
 * and every posting lives at `/careers/job?id=N`. Each posting must be found, keyed by its id
 * (not collapsed into one), crawled and extracted; a second run finds the same keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite } from '@gleaner/db';
import { createRedisConnection, readRunLogTail, runLogKey, waitForRedis } from '@gleaner/queue';
import { createFixtureCareerSite, type FixtureCareerSite } from '@gleaner/testing';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

const POSTINGS = 12;

let system: InProcessSystem;
let site: FixtureCareerSite;

beforeAll(async () => {
  [system, site] = await Promise.all([
    startInProcessSystem('career-site-discovery', { crawlConcurrency: 4 }),
    createFixtureCareerSite({
      postings: POSTINGS,
      seed: 21,
      postingPaths: 'query',
      sitemaps: 'index',
    }),
  ]);
});

afterAll(async () => {
  await system?.close();
  await site?.close();
});

async function postingRows(siteId: string) {
  const { rows } = await system.handle.pool.query<{
    external_id: string;
    url: string;
    status: string;
  }>('SELECT external_id, url, status FROM postings WHERE site_id = $1 ORDER BY url', [siteId]);
  return rows;
}

describe('a career site registered with only its url', () => {
  it('is scraped through its discovered sitemaps, one posting per ?id=', async () => {
    const row = await insertSite(system.handle.db, {
      siteName: 'discovered',
      kind: 'career-site',
      config: { url: site.url },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
    });
    const first = await system.runToEnd(row.id, 120_000);
    expect(first).toMatchObject({ status: 'succeeded', readyCount: POSTINGS });

    const host = new URL(site.url).host;
    const expected = site
      .postings()
      .map((posting) => ({
        external_id: `${host}${posting.path}`,
        url: posting.url,
        status: 'ready',
      }))
      .sort((a, b) => a.url.localeCompare(b.url));
    expect(expected[0]!.url).toMatch(/\/careers\/job\?id=\d+$/);
    expect(await postingRows(row.id)).toEqual(expected);
    expect(site.requestCount('/robots.txt')).toBeGreaterThanOrEqual(1);
    expect(site.requestCount('/sitemaps/postings-1.xml.gz')).toBe(1);

    // The run's log says how the postings were found.
    const redis = createRedisConnection(system.namespace.url, 'producer');
    try {
      await waitForRedis(redis);
      const log = await readRunLogTail(
        redis,
        runLogKey(system.namespace.prefix, first.runId),
        1000,
      );
      const listing = log.map((entry) => entry.line).find((line) => line.msg === 'listing done');
      expect(listing?.fields).toMatchObject({
        discovery: 'robots-sitemaps',
        sitemaps: `${new URL(site.url).origin}/sitemaps/index.xml`,
        sitemapsSkipped: 0,
      });
      expect(listing?.fields?.sitemapsRead).toBeGreaterThanOrEqual(3);
    } finally {
      redis.disconnect();
    }

    // The same site again: the same keys, no new rows.
    const second = await system.runToEnd(row.id, 120_000);
    expect(second.status).toBe('succeeded');
    expect((await postingRows(row.id)).map((posting) => posting.external_id)).toEqual(
      expected.map((posting) => posting.external_id),
    );
  });
});
