import { afterEach, describe, expect, it } from 'vitest';
import {
  createFixtureCareerSite,
  type FixtureCareerSite,
  type FixtureSiteOptions,
} from './index.js';

const sites: FixtureCareerSite[] = [];

async function startSite(options: FixtureSiteOptions = {}): Promise<FixtureCareerSite> {
  const site = await createFixtureCareerSite(options);
  sites.push(site);
  return site;
}

afterEach(async () => {
  await Promise.all(sites.splice(0).map((site) => site.close()));
});

function jobLinks(html: string): string[] {
  return [...html.matchAll(/<a class="job-link" href="([^"]+)">/g)].map((match) => match[1] ?? '');
}

function nextLink(html: string): string | null {
  return /<a rel="next" href="([^"]+)">/.exec(html)?.[1] ?? null;
}

function jsonLdPosting(html: string): Record<string, unknown> {
  // The test's own reading of the page: every JSON-LD block, then the JobPosting node in it.
  const blocks = [...html.matchAll(/<script[^>]*ld\+json[^>]*>([\s\S]*?)<\/script>/gi)].map(
    (match) => JSON.parse(match[1] ?? 'null') as Record<string, unknown>,
  );
  for (const block of blocks) {
    const nodes = Array.isArray(block['@graph'])
      ? (block['@graph'] as Record<string, unknown>[])
      : [block];
    const posting = nodes.find((node) => JSON.stringify(node['@type']).includes('JobPosting'));
    if (posting !== undefined) return posting;
  }
  throw new Error('no JobPosting JSON-LD on the page');
}

describe('createFixtureCareerSite', () => {
  it('listens on loopback and serves robots.txt pointing at the sitemap', async () => {
    const site = await startSite({ postings: 3 });
    expect(site.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(site.sitemapUrl).toBe(`${site.url}/sitemap.xml`);
    expect(site.listingUrl).toBe(`${site.url}/jobs`);

    const response = await fetch(`${site.url}/robots.txt`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const robots = await response.text();
    expect(robots).toContain('User-agent: *');
    expect(robots).toContain('Allow: /');
    expect(robots).toContain(`Sitemap: ${site.url}/sitemap.xml`);
  });

  it('lists every published posting in the sitemap with a lastmod', async () => {
    const site = await startSite({ postings: 30 });
    const response = await fetch(site.sitemapUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/xml/);
    const xml = await response.text();
    expect(xml).toContain('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">');
    const locations = [...xml.matchAll(/<loc>([^<]+)<\/loc><lastmod>([^<]+)<\/lastmod>/g)];
    expect(locations.map((match) => match[1])).toEqual(
      site.postings().map((posting) => posting.url),
    );
    for (const match of locations) expect(Number.isNaN(Date.parse(match[2] ?? ''))).toBe(false);
  });

  it('paginates the listing with rel=next links', async () => {
    const site = await startSite({ postings: 60, listingPageSize: 25 });
    const seen: string[] = [];
    let url: string | null = site.listingUrl;
    let pages = 0;
    while (url !== null) {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      seen.push(...jobLinks(html));
      const next = nextLink(html);
      url = next === null ? null : new URL(next, site.url).toString();
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toHaveLength(60);
    expect(seen).toEqual(site.postings().map((posting) => posting.path));
    expect((await fetch(`${site.listingUrl}?page=4`)).status).toBe(404);
    expect((await fetch(`${site.listingUrl}?page=zero`)).status).toBe(404);
  });

  it('serves posting pages with JSON-LD, the same description in the body, ETag and Last-Modified', async () => {
    const site = await startSite({ postings: 5, pageBytes: 30_000 });
    for (const posting of site.postings()) {
      expect(posting.path).toBe(`/jobs/${posting.id}`);
      expect(posting.url).toBe(`${site.url}${posting.path}`);
      const response = await fetch(posting.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('etag')).toMatch(/^"[^"]+"$/);
      expect(Number.isNaN(Date.parse(response.headers.get('last-modified') ?? ''))).toBe(false);
      const html = await response.text();
      // "About pageBytes": within a few percent.
      expect(Buffer.byteLength(html)).toBeGreaterThan(28_500);
      expect(Buffer.byteLength(html)).toBeLessThan(31_500);
      expect(jsonLdPosting(html)).toEqual(posting.jsonLd);
      expect(html).toContain(
        `<div class="job-description">\n${posting.expected.description}\n</div>`,
      );
      expect(posting.jsonLd.description).toBe(posting.expected.description);
    }
  });

  it('answers conditional requests with 304', async () => {
    const site = await startSite({ postings: 1 });
    const posting = site.postings()[0];
    if (posting === undefined) throw new Error('no posting');
    const first = await fetch(posting.url);
    await first.arrayBuffer();
    const etag = first.headers.get('etag') ?? '';
    const lastModified = first.headers.get('last-modified') ?? '';
    expect((await fetch(posting.url, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect(
      (await fetch(posting.url, { headers: { 'if-modified-since': lastModified } })).status,
    ).toBe(304);
    expect((await fetch(posting.url, { headers: { 'if-none-match': '"other"' } })).status).toBe(
      200,
    );
  });

  it('generates the same content for the same seed and different content for another', async () => {
    const [a, b, c] = await Promise.all([
      startSite({ postings: 8, seed: 42 }),
      startSite({ postings: 20, seed: 42 }),
      startSite({ postings: 8, seed: 43 }),
    ]);
    const expectedOf = (site: FixtureCareerSite) =>
      site.postings().map((posting) => posting.expected);
    expect(expectedOf(b).slice(0, 8)).toEqual(expectedOf(a));
    expect(expectedOf(c)).not.toEqual(expectedOf(a));
  });

  it('varies the generated postings like real career sites do', async () => {
    const site = await startSite({ postings: 200 });
    const postings = site.postings();
    const share = (test: (posting: (typeof postings)[number]) => boolean): number =>
      postings.filter(test).length / postings.length;
    expect(share((posting) => posting.expected.isRemote === true)).toBeGreaterThan(0.15);
    expect(share((posting) => posting.expected.isRemote === true)).toBeLessThan(0.35);
    expect(share((posting) => posting.expected.salaryMin === null)).toBeGreaterThan(0.05);
    expect(share((posting) => posting.expected.requirements !== null)).toBeGreaterThan(0.6);
    const currencies = new Set(postings.map((posting) => posting.expected.salaryCurrency));
    expect(currencies).toEqual(new Set(['USD', 'EUR', 'GBP', null]));
    const periods = new Set(postings.map((posting) => posting.expected.salaryPeriod));
    expect(periods).toEqual(new Set(['year', 'hour', null]));
    expect(share((posting) => Array.isArray(posting.jsonLd.employmentType))).toBeGreaterThan(0);
    for (const posting of postings) {
      expect(posting.expected.datePosted).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(posting.expected.title).toBe(posting.expected.title?.trim());
    }
  });

  it('varies the JSON-LD script tag across postings', async () => {
    const site = await startSite({ postings: 40 });
    const openTags = new Set<string>();
    for (const posting of site.postings()) {
      const html = await (await fetch(posting.url)).text();
      for (const match of html.matchAll(/<script[^>]*ld\+json[^>]*>/gi)) openTags.add(match[0]);
    }
    expect(openTags.size).toBeGreaterThanOrEqual(4);
  });

  it('unpublishes removed postings: 404, and gone from the sitemap and listings', async () => {
    const site = await startSite({ postings: 10 });
    const [removed, kept] = site.postings();
    if (removed === undefined || kept === undefined) throw new Error('too few postings');
    site.remove([removed.id]);

    expect((await fetch(removed.url)).status).toBe(404);
    expect((await fetch(kept.url)).status).toBe(200);
    expect(site.get(removed.id)).toBeUndefined();
    expect(site.postings().map((posting) => posting.id)).not.toContain(removed.id);
    expect(await (await fetch(site.sitemapUrl)).text()).not.toContain(removed.url);
    expect(jobLinks(await (await fetch(site.listingUrl)).text())).not.toContain(removed.path);

    site.remove([removed.id]); // already removed: no-op
    expect(() => site.remove(['job-9999'])).toThrow(/job-9999/);
  });

  it('changes the page, validators and expected record on update', async () => {
    const site = await startSite({ postings: 3 });
    const before = site.get('job-0002');
    if (before === undefined) throw new Error('missing job-0002');
    const firstResponse = await fetch(before.url);
    const oldHtml = await firstResponse.text();
    const oldEtag = firstResponse.headers.get('etag') ?? '';
    const oldLastModified = Date.parse(firstResponse.headers.get('last-modified') ?? '');

    const after = site.update('job-0002', {
      title: 'Head of Widgets & Gadgets',
      description: '<p>Entirely new text.</p>',
    });
    expect(after.expected).toEqual({
      ...before.expected,
      title: 'Head of Widgets & Gadgets',
      description: '<p>Entirely new text.</p>',
    });
    expect(site.get('job-0002')).toBe(after);

    const response = await fetch(after.url, { headers: { 'if-none-match': oldEtag } });
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).not.toBe(oldEtag);
    expect(Date.parse(response.headers.get('last-modified') ?? '')).toBeGreaterThan(
      oldLastModified,
    );
    const html = await response.text();
    expect(html).not.toBe(oldHtml);
    expect(html).toContain('<h1 class="job-title">Head of Widgets &amp; Gadgets</h1>');
    expect(jsonLdPosting(html)).toEqual(after.jsonLd);
    expect(after.jsonLd.title).toBe('Head of Widgets & Gadgets');
    expect(jobLinks(await (await fetch(site.listingUrl)).text())).toContain(after.path);
    expect(await (await fetch(site.listingUrl)).text()).toContain(
      'Head of Widgets &amp; Gadgets</a>',
    );

    expect(() => site.update('job-0404', { title: 'x' })).toThrow(/job-0404/);
  });

  it('counts requests by path prefix', async () => {
    const site = await startSite({ postings: 3 });
    const [first, second] = site.postings();
    if (first === undefined || second === undefined) throw new Error('too few postings');
    for (const url of [
      site.listingUrl,
      `${site.listingUrl}?page=1`,
      first.url,
      first.url,
      second.url,
      `${site.url}/nope`,
    ]) {
      await (await fetch(url)).arrayBuffer();
    }
    expect(site.requestCount()).toBe(6);
    expect(site.requestCount('/jobs/')).toBe(3);
    expect(site.requestCount(first.path)).toBe(2);
    expect(site.requestCount('/jobs?')).toBe(1);
    expect(site.requestCount('/nope')).toBe(1);
    site.resetRequestCount();
    expect(site.requestCount()).toBe(0);
  });

  it('answers 404 for unknown paths and 405 for other methods', async () => {
    const site = await startSite({ postings: 1 });
    expect((await fetch(`${site.url}/`)).status).toBe(404);
    expect((await fetch(`${site.url}/jobs/job-0002`)).status).toBe(404);
    expect((await fetch(`${site.url}/jobs/%E0%A4%A`)).status).toBe(404);
    const post = await fetch(site.listingUrl, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(site.listingUrl, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('closes idempotently, also with keep-alive connections open', async () => {
    const site = await createFixtureCareerSite({ postings: 1 });
    await (await fetch(site.listingUrl)).text(); // leaves a keep-alive connection in fetch's pool
    const started = Date.now();
    await Promise.all([site.close(), site.close()]);
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(fetch(site.listingUrl)).rejects.toThrow();
  });

  it('rejects invalid options', async () => {
    await expect(createFixtureCareerSite({ postings: -1 })).rejects.toThrow(RangeError);
    await expect(createFixtureCareerSite({ listingPageSize: 0 })).rejects.toThrow(
      /listingPageSize/,
    );
  });

  it('serves hostile posting pages of one unclosed tag, gzipped when the client accepts it', async () => {
    const site = await startSite({ postings: 2, hostilePages: { bytes: 1 << 20 } });
    const posting = site.postings()[0]!;
    const plain = await fetch(posting.url, { headers: { 'accept-encoding': 'identity' } });
    const text = await plain.text();
    expect(text).toHaveLength(1 << 20);
    expect(text.startsWith('<meta <meta ')).toBe(true);
    expect(plain.headers.get('content-encoding')).toBeNull();
    const gzipped = await fetch(posting.url, { headers: { 'accept-encoding': 'gzip' } });
    expect(gzipped.headers.get('content-encoding')).toBe('gzip');
    expect(Number(gzipped.headers.get('content-length'))).toBeLessThan(10_000);
    expect(await gzipped.text()).toBe(text);
    // Listed as usual.
    expect(await (await fetch(site.sitemapUrl)).text()).toContain(posting.url);
  });

  it('serves an empty site', async () => {
    const site = await startSite({ postings: 0 });
    expect(site.postings()).toEqual([]);
    const listing = await fetch(site.listingUrl);
    expect(listing.status).toBe(200);
    expect(jobLinks(await listing.text())).toEqual([]);
    expect(await (await fetch(site.sitemapUrl)).text()).not.toContain('<url>');
  });
});
