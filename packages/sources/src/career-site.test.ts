import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher } from '@gleaner/http';
import { createFixtureCareerSite, type FixtureCareerSite } from '@gleaner/testing';
import { careerSiteAdapter, careerSiteConfig } from './adapters/career-site.js';
import { describeAdapters } from './registry.js';

let site: FixtureCareerSite;
const fetcher = createFetcher({
  userAgent: 'GleanerTest',
  timeoutMs: 5000,
  maxBodyBytes: 5_000_000,
  maxRedirects: 3,
  allowPrivateNetworks: true,
});

beforeAll(async () => {
  site = await createFixtureCareerSite({ postings: 60, listingPageSize: 25, seed: 3 });
});

afterAll(async () => {
  await site.close();
  await fetcher.close();
});

const urls = () =>
  site
    .postings()
    .map((p) => p.url)
    .sort();

describe('career-site adapter', () => {
  it('lists every posting from the sitemap, completely', async () => {
    const config = careerSiteConfig.parse({ url: site.url, sitemapUrl: site.sitemapUrl });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings.map((p) => p.url).sort()).toEqual(urls());
    expect(new Set(result.postings.map((p) => p.externalId)).size).toBe(60);
  });

  it('follows listing pages through rel=next', async () => {
    const config = careerSiteConfig.parse({ url: site.url, listingUrl: site.listingUrl });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings.map((p) => p.url).sort()).toEqual(urls());
  });

  it('stops at a limit and says the listing is incomplete', async () => {
    const config = careerSiteConfig.parse({ url: site.url, sitemapUrl: site.sitemapUrl });
    const result = await careerSiteAdapter.list(config, { fetcher }, { limit: 10 });
    expect(result.postings).toHaveLength(10);
    expect(result.complete).toBe(false);
  });

  it('stops at the page budget and says so', async () => {
    const config = careerSiteConfig.parse({
      url: site.url,
      listingUrl: site.listingUrl,
      maxPages: 1,
    });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(result.postings).toHaveLength(25);
    expect(result.complete).toBe(false);
  });

  it('refuses a sitemap that is not one', async () => {
    const config = careerSiteConfig.parse({ url: site.url, sitemapUrl: `${site.url}/robots.txt` });
    await expect(careerSiteAdapter.list(config, { fetcher })).rejects.toMatchObject({
      code: 'SOURCE_SITEMAP_INVALID',
      retryClass: 'permanent',
    });
  });

  it('validates its config with field paths', () => {
    const bad = careerSiteConfig.safeParse({
      url: 'javascript:alert(1)',
      postingUrlPattern: '(',
      extra: 1,
    });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.') || i.code);
    expect(paths).toEqual(expect.arrayContaining(['url', 'postingUrlPattern']));
    expect(careerSiteConfig.safeParse({ url: 'https://a.example' }).error?.issues[0]?.path).toEqual(
      ['sitemapUrl'],
    );
  });

  it('describes itself with a JSON Schema', () => {
    expect(describeAdapters()[0]).toMatchObject({
      kind: 'career-site',
      configSchema: { type: 'object', properties: { url: { type: 'string' } } },
    });
  });
});
