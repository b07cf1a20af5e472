import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createFixtureCareerSite,
  type FixtureCareerSite,
  type FixtureSiteOptions,
} from '@gleaner/testing';
import {
  careerSiteAdapter,
  careerSiteConfig,
  isPostingLikeUrl,
  listCareerSite,
} from './adapters/career-site.js';
import { describeAdapters } from './registry.js';
import { createTestFetcher } from './adapters/mapping.test-support.js';

let site: FixtureCareerSite;
const fetcher = createTestFetcher();

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
    // The URL alone is a whole configuration: the postings are discovered.
    expect(careerSiteConfig.safeParse({ url: 'https://a.example' }).success).toBe(true);
  });

  it('describes itself with a JSON Schema', () => {
    expect(describeAdapters()[0]).toMatchObject({
      kind: 'career-site',
      configSchema: { type: 'object', properties: { url: { type: 'string' } } },
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Discovery from `url` alone

const extraSites: FixtureCareerSite[] = [];
const servers: Server[] = [];

async function startFixture(options: FixtureSiteOptions): Promise<FixtureCareerSite> {
  const started = await createFixtureCareerSite(options);
  extraSites.push(started);
  return started;
}

type Route = { status?: number; type?: string; body: string | Buffer };

/** A small loopback site answering fixed routes (path and query), 404 otherwise. */
async function startRoutes(build: (origin: string) => Record<string, Route>): Promise<{
  origin: string;
  requests: string[];
}> {
  const requests: string[] = [];
  let routes: Record<string, Route> = {};
  const server = createServer((request, response) => {
    requests.push(request.url ?? '/');
    const route = routes[request.url ?? '/'];
    if (!route) return void response.writeHead(404, { 'content-type': 'text/plain' }).end('no');
    response
      .writeHead(route.status ?? 200, { 'content-type': route.type ?? 'application/xml' })
      .end(route.body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  routes = build(origin);
  return { origin, requests };
}

const urlset = (locs: string[]) =>
  `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((loc) => `<url><loc>${loc.replace(/&/g, '&amp;')}</loc></url>`)
    .join('')}</urlset>`;
const sitemapIndex = (locs: string[]) =>
  `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((loc) => `<sitemap><loc>${loc}</loc></sitemap>`)
    .join('')}</sitemapindex>`;
const robots = (lines: string[]) => ({
  type: 'text/plain',
  body: `User-agent: *\n${lines.join('\n')}\n`,
});

afterEach(async () => {
  await Promise.all(extraSites.splice(0).map((entry) => entry.close()));
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

describe('career-site discovery from url alone', () => {
  it('finds the sitemap robots.txt names', async () => {
    const result = await listCareerSite(careerSiteConfig.parse({ url: site.url }), { fetcher });
    expect(result.complete).toBe(true);
    expect(result.postings.map((p) => p.url).sort()).toEqual(urls());
    expect(result.discovery).toMatchObject({
      method: 'robots-sitemaps',
      sitemaps: [site.sitemapUrl],
      sitemapsRead: 1,
      skipped: [],
    });
  });

  it('reads a sitemap index of gzipped and plain sitemaps, postings told apart by ?id=', async () => {
    const indexed = await startFixture({
      postings: 30,
      seed: 5,
      postingPaths: 'query',
      sitemaps: 'index',
    });
    const result = await listCareerSite(careerSiteConfig.parse({ url: indexed.url }), { fetcher });
    const expected = indexed.postings().map((p) => p.url);
    expect(expected[6]).toBe(`${indexed.url}/careers/job?id=7`);
    expect(result.postings.map((p) => p.url).sort()).toEqual([...expected].sort());
    // Thirty postings, not one: the query is part of their identity.
    expect(new Set(result.postings.map((p) => p.externalId)).size).toBe(30);
    expect(result.postings.map((p) => p.externalId)).toContain(
      `${new URL(indexed.url).host}/careers/job?id=7`,
    );
    expect(result.complete).toBe(true);
    expect(result.discovery).toMatchObject({
      method: 'robots-sitemaps',
      sitemaps: [`${indexed.url}/sitemaps/index.xml`],
      // The index, the gzipped half, the plain half and the pages; the index's link to itself is cut.
      sitemapsRead: 4,
    });
    expect(indexed.requestCount('/sitemaps/index.xml')).toBe(1);
    expect(indexed.requestCount('/sitemaps/postings-1.xml.gz')).toBe(1);
    // The whole-site sitemap's other pages are not postings.
    expect(result.postings.some((p) => /\/(about|blog)/.test(p.url))).toBe(false);
  });

  it('looks in the usual places when robots.txt names no sitemap', async () => {
    const unlisted = await startFixture({ postings: 12, seed: 6, sitemaps: 'unlisted' });
    const result = await listCareerSite(careerSiteConfig.parse({ url: unlisted.url }), {
      fetcher,
    });
    expect(result.postings.map((p) => p.url).sort()).toEqual(
      unlisted
        .postings()
        .map((p) => p.url)
        .sort(),
    );
    expect(result.complete).toBe(true);
    expect(result.discovery.method).toBe('common-sitemaps');
    // Every usual place is tried once; the 404s are fine.
    expect(unlisted.requestCount('/sitemap.xml')).toBe(1);
    expect(unlisted.requestCount('/sitemap_index.xml')).toBe(1);
    expect(unlisted.requestCount('/careers/sitemap.xml')).toBe(1);
    expect(unlisted.requestCount('/jobs/sitemap.xml')).toBe(1);
    expect(result.discovery.skipped.map((s) => s.reason)).toEqual([
      'HTTP_STATUS_404',
      'HTTP_STATUS_404',
      'HTTP_STATUS_404',
    ]);
  });

  it('reads a gzipped sitemap given as sitemapUrl', async () => {
    const indexed = await startFixture({ postings: 10, seed: 8, sitemaps: 'index' });
    const config = careerSiteConfig.parse({
      url: indexed.url,
      sitemapUrl: `${indexed.url}/sitemaps/postings-1.xml.gz`,
    });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(result.postings.map((p) => p.url)).toEqual(
      indexed
        .postings()
        .slice(0, 5)
        .map((p) => p.url),
    );
  });

  it('takes robots.txt sitemaps only on the site, http(s) and without credentials', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([
        'Sitemap: http://other.example/sitemap.xml',
        `Sitemap: ${origin.replace('://', '://user:pw@')}/secret.xml`,
        'Sitemap: file:///etc/passwd',
        `Sitemap: ${origin}/careers.xml`,
      ]),
      '/careers.xml': { body: urlset([`${origin}/jobs/1`, `${origin}/jobs/2`]) },
      '/secret.xml': { body: urlset([`${origin}/jobs/secret`]) },
    }));
    const result = await listCareerSite(careerSiteConfig.parse({ url: target.origin }), {
      fetcher,
    });
    expect(result.postings.map((p) => p.url)).toEqual([
      `${target.origin}/jobs/1`,
      `${target.origin}/jobs/2`,
    ]);
    expect(result.refused?.byCode).toEqual({
      SOURCE_URL_OFF_SITE: 1,
      SOURCE_URL_CREDENTIALS: 1,
      SOURCE_URL_SCHEME: 1,
    });
    expect(target.requests).not.toContain('/secret.xml');
  });

  it('refuses index children off the site and stops at indexes nested too deep', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/i0.xml`]),
      '/i0.xml': {
        body: sitemapIndex([`${origin}/i1.xml`, 'http://127.0.0.2:1/x.xml', `${origin}/a.xml`]),
      },
      '/i1.xml': { body: sitemapIndex([`${origin}/i2.xml`, `${origin}/i0.xml`]) },
      '/i2.xml': { body: sitemapIndex([`${origin}/i3.xml`, `${origin}/b.xml`]) },
      '/i3.xml': { body: sitemapIndex([`${origin}/i4.xml`]) },
      '/i4.xml': { body: urlset([`${origin}/jobs/too-deep`]) },
      '/a.xml': { body: urlset([`${origin}/jobs/a`]) },
      '/b.xml': { body: urlset([`${origin}/jobs/b`]) },
    }));
    const result = await listCareerSite(careerSiteConfig.parse({ url: target.origin }), {
      fetcher,
    });
    expect(result.postings.map((p) => p.url).sort()).toEqual([
      `${target.origin}/jobs/a`,
      `${target.origin}/jobs/b`,
    ]);
    expect(result.complete).toBe(false);
    expect(result.refused?.byCode).toEqual({ SOURCE_URL_OFF_SITE: 1 });
    expect(result.discovery.skipped).toEqual([
      { url: `${target.origin}/i4.xml`, reason: expect.stringMatching(/nested more than 3/) },
    ]);
    expect(target.requests).not.toContain('/i4.xml');
    expect(target.requests.filter((r) => r === '/i0.xml')).toHaveLength(1);
  });

  it('stops at the page budget across an index', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/index.xml`]),
      '/index.xml': {
        body: sitemapIndex([1, 2, 3, 4].map((n) => `${origin}/s${n}.xml`)),
      },
      ...Object.fromEntries(
        [1, 2, 3, 4].map((n) => [`/s${n}.xml`, { body: urlset([`${origin}/jobs/${n}`]) }]),
      ),
    }));
    const config = careerSiteConfig.parse({ url: target.origin, maxPages: 3 });
    const result = await listCareerSite(config, { fetcher });
    expect(result.postings).toHaveLength(2);
    expect(result.complete).toBe(false);
  });

  it('refuses a gzip bomb with a clear code', { timeout: 30_000 }, async () => {
    // 1 MiB members back to back: ~60 KB on the wire, 60 MiB inflated.
    const member = gzipSync(Buffer.alloc(1 << 20, 0x20), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 60 }, () => member));
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/jobs.xml.gz`]),
      '/jobs.xml.gz': { type: 'application/x-gzip', body: bomb },
    }));
    await expect(
      listCareerSite(careerSiteConfig.parse({ url: target.origin }), { fetcher }),
    ).rejects.toMatchObject({ code: 'SOURCE_SITEMAP_TOO_LARGE', retryClass: 'permanent' });
    await expect(
      listCareerSite(
        careerSiteConfig.parse({ url: target.origin, sitemapUrl: `${target.origin}/jobs.xml.gz` }),
        { fetcher },
      ),
    ).rejects.toMatchObject({ code: 'SOURCE_SITEMAP_TOO_LARGE' });
  });

  it('keys postings by identifying query parameters, not tracking ones', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/sitemap.xml`]),
      '/sitemap.xml': {
        body: urlset([
          ...[1, 2, 3, 4, 5].map((id) => `${origin}/careers/job?id=${id}`),
          `${origin}/careers/job?id=1&utm_source=sitemap`,
          `${origin}/careers/job?gh_src=x&id=2`,
          `${origin}/jobs/backend?utm_medium=feed#apply`,
          `${origin}/jobs?page=2`,
          `${origin}/about`,
        ]),
      },
    }));
    const result = await listCareerSite(careerSiteConfig.parse({ url: target.origin }), {
      fetcher,
    });
    const host = new URL(target.origin).host;
    expect(result.postings).toEqual([
      ...[1, 2, 3, 4, 5].map((id) => ({
        externalId: `${host}/careers/job?id=${id}`,
        url: `${target.origin}/careers/job?id=${id}`,
      })),
      { externalId: `${host}/jobs/backend`, url: `${target.origin}/jobs/backend` },
    ]);
  });

  it('lets postingUrlPattern replace the default filter', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/sitemap.xml`]),
      '/sitemap.xml': { body: urlset([`${origin}/stellen/1`, `${origin}/jobs/2`]) },
    }));
    const config = careerSiteConfig.parse({ url: target.origin, postingUrlPattern: '^/stellen/' });
    const result = await listCareerSite(config, { fetcher });
    expect(result.postings.map((p) => p.url)).toEqual([`${target.origin}/stellen/1`]);
  });

  it('reads url as a listing page when no sitemap lists a posting', async () => {
    const target = await startRoutes((origin) => ({
      '/robots.txt': robots([`Sitemap: ${origin}/gone.xml`]),
      '/sitemap.xml': { type: 'text/html', body: '<html><body>not here</body></html>' },
      '/careers': {
        type: 'text/html',
        body: `<a href="/careers/job?id=1">One</a> <a href="/careers/job?id=2&utm_source=x">Two</a> <a href="/about">About</a> <a rel="next" href="/careers?page=2">next</a>`,
      },
      '/careers?page=2': { type: 'text/html', body: `<a href="/positions/3">Three</a>` },
    }));
    const result = await listCareerSite(
      careerSiteConfig.parse({ url: `${target.origin}/careers` }),
      { fetcher },
    );
    expect(result.postings.map((p) => p.url)).toEqual([
      `${target.origin}/careers/job?id=1`,
      `${target.origin}/careers/job?id=2`,
      `${target.origin}/positions/3`,
    ]);
    expect(result.complete).toBe(true);
    expect(result.discovery).toMatchObject({
      method: 'url-listing-page',
      sitemaps: [`${target.origin}/gone.xml`],
      skipped: [{ url: `${target.origin}/gone.xml`, reason: 'HTTP_STATUS_404' }],
    });
  });
});

describe('isPostingLikeUrl', () => {
  it('takes posting-looking paths and queries, not section or site pages', () => {
    const yes = [
      ['/jobs/123', ''],
      ['/job/backend-engineer', ''],
      ['/careers/engineering/backend', ''],
      ['/en/positions/7', ''],
      ['/vacancies/x', ''],
      ['/careers/job', '?id=7'],
      ['/job', '?jobId=7'],
      ['/about-us', '?gh_jid=4012345'],
    ];
    const no = [
      ['/jobs', ''],
      ['/jobs/', ''],
      ['/jobs', '?page=2'],
      ['/careers', ''],
      ['/about', '?id=3'],
      ['/blog/how-we-hire', ''],
      ['/', ''],
    ];
    for (const [pathname, search] of yes)
      expect(isPostingLikeUrl(pathname!, search!), pathname).toBe(true);
    for (const [pathname, search] of no)
      expect(isPostingLikeUrl(pathname!, search!), pathname).toBe(false);
  });
});
