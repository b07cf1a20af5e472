import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher } from '@gleaner/http';
import { careerSiteAdapter, careerSiteConfig } from './career-site.js';
import { checkDiscoveredUrl, type DiscoveryRefusalCode } from './discovered-url.js';

const site = new URL('https://careers.acme.example/');
const page = 'https://careers.acme.example/jobs/';

describe('checkDiscoveredUrl', () => {
  it.each([
    ['/jobs/1', 'https://careers.acme.example/jobs/1'],
    ['2', 'https://careers.acme.example/jobs/2'],
    ['https://CAREERS.acme.example/jobs/3#apply', 'https://careers.acme.example/jobs/3'],
    ['https://careers.acme.example:443/jobs/4', 'https://careers.acme.example/jobs/4'],
    ['  /jobs/5?ref=list  ', 'https://careers.acme.example/jobs/5?ref=list'],
    // An http link on an https site names the same host; the fetcher checks the address anyway.
    ['http://careers.acme.example/jobs/6', 'http://careers.acme.example/jobs/6'],
    // What follows `#` is a fragment, not a host: this one really goes to the site.
    ['https://careers.acme.example#@127.0.0.1/', 'https://careers.acme.example/'],
  ])('takes %s on the site as %s', (raw, expected) => {
    const checked = checkDiscoveredUrl(raw, page, site);
    expect(checked.accepted && checked.url.href).toBe(expected);
  });

  it.each<[string, DiscoveryRefusalCode]>([
    ['http://[::1', 'SOURCE_URL_INVALID'],
    ['http://exa mple.com/', 'SOURCE_URL_INVALID'],
    ['http://999.1.1.1.1/', 'SOURCE_URL_INVALID'],
    ['file:///etc/passwd', 'SOURCE_URL_SCHEME'],
    ['javascript:alert(1)', 'SOURCE_URL_SCHEME'],
    ['data:text/html,<script>alert(1)</script>', 'SOURCE_URL_SCHEME'],
    ['gopher://127.0.0.1:6379/_FLUSHALL', 'SOURCE_URL_SCHEME'],
    ['ftp://careers.acme.example/jobs/1', 'SOURCE_URL_SCHEME'],
    ['mailto:jobs@acme.example', 'SOURCE_URL_SCHEME'],
    ['https://user:pass@careers.acme.example/jobs/1', 'SOURCE_URL_CREDENTIALS'],
    ['https://careers.acme.example@127.0.0.1/jobs/1', 'SOURCE_URL_CREDENTIALS'],
    ['https://careers.acme.example:443@169.254.169.254/', 'SOURCE_URL_CREDENTIALS'],
    ['https://careers.acme.example:8443/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['https://careers.acme.example.evil.example/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['https://127.0.0.1/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['https://2130706433/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['https://[::ffff:7f00:1]/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['https://169.254.169.254/latest/meta-data/', 'SOURCE_URL_OFF_SITE'],
    ['https://localhost/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['//127.0.0.1/jobs/1', 'SOURCE_URL_OFF_SITE'],
    ['\\\\127.0.0.1\\jobs\\1', 'SOURCE_URL_OFF_SITE'],
  ])('refuses %s as %s', (raw, code) => {
    expect(checkDiscoveredUrl(raw, page, site)).toMatchObject({ accepted: false, code });
  });
});

describe('career-site discovery', () => {
  let server: Server;
  let origin: string;
  const requested: string[] = [];
  const fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5000,
    maxBodyBytes: 1_000_000,
    maxRedirects: 0,
    allowPrivateNetworks: true,
  });

  const hostileLocs = () => [
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/jobs/1',
    `http://localhost:${new URL(origin).port}/jobs/1`,
    'file:///etc/passwd',
    'gopher://127.0.0.1:6379/_FLUSHALL',
    `http://user:pass@${new URL(origin).host}/jobs/1`,
    `http://${new URL(origin).host}@127.0.0.2/jobs/1`,
    'http://[::1',
  ];

  beforeAll(async () => {
    server = createServer((request, response) => {
      requested.push(request.url ?? '');
      const xml = (body: string) =>
        response.writeHead(200, { 'content-type': 'application/xml' }).end(body);
      switch (request.url) {
        case '/sitemap.xml':
          xml(
            `<urlset>${[`${origin}/jobs/1`, ...hostileLocs()]
              .map((loc) => `<url><loc>${loc.replace(/&/g, '&amp;')}</loc></url>`)
              .join('')}</urlset>`,
          );
          return;
        case '/index.xml':
          xml(
            `<sitemapindex>${['/sitemap.xml', 'http://127.0.0.2/sitemap.xml', 'file:///etc/passwd']
              .map((loc) => `<sitemap><loc>${loc}</loc></sitemap>`)
              .join('')}</sitemapindex>`,
          );
          return;
        case '/list':
          response.writeHead(200, { 'content-type': 'text/html' }).end(
            `<html><body>
              <a href="/jobs/2">Engineer</a>
              <a href="mailto:jobs@acme.example">Write to us</a>
              <a href="javascript:void(0)">Menu</a>
              <a href="https://evil.example/jobs/9">Elsewhere</a>
              <a href="http://u:p@${new URL(origin).host}/jobs/3">Tricky</a>
              <a href="//127.0.0.2/jobs/4">Protocol-relative</a>
              <a rel="next" href="http://[::1]/list?page=2">Next</a>
            </body></html>`,
          );
          return;
        default:
          response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await fetcher.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('lists only the site’s own URLs from a sitemap and says why it refused the rest', async () => {
    const config = careerSiteConfig.parse({ url: origin, sitemapUrl: `${origin}/sitemap.xml` });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(result.postings.map((p) => p.url)).toEqual([`${origin}/jobs/1`]);
    expect(result.complete).toBe(true);
    expect(result.refused).toEqual({
      total: 8,
      byCode: {
        SOURCE_URL_OFF_SITE: 3,
        SOURCE_URL_SCHEME: 2,
        SOURCE_URL_CREDENTIALS: 2,
        SOURCE_URL_INVALID: 1,
      },
      examples: [
        { url: 'http://169.254.169.254/latest/meta-data/', code: 'SOURCE_URL_OFF_SITE' },
        { url: 'http://[::1]/jobs/1', code: 'SOURCE_URL_OFF_SITE' },
        { url: expect.stringMatching(/^http:\/\/localhost:/), code: 'SOURCE_URL_OFF_SITE' },
        { url: 'file:///etc/passwd', code: 'SOURCE_URL_SCHEME' },
        { url: 'gopher://127.0.0.1:6379/_FLUSHALL', code: 'SOURCE_URL_SCHEME' },
        { url: expect.stringContaining('user:pass@'), code: 'SOURCE_URL_CREDENTIALS' },
        { url: expect.stringContaining('@127.0.0.2/'), code: 'SOURCE_URL_CREDENTIALS' },
        { url: 'http://[::1', code: 'SOURCE_URL_INVALID' },
      ],
    });
  });

  it('follows only the site’s own child sitemaps', async () => {
    requested.length = 0;
    const config = careerSiteConfig.parse({ url: origin, sitemapUrl: `${origin}/index.xml` });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(requested).toEqual(['/index.xml', '/sitemap.xml']);
    expect(result.postings).toHaveLength(1);
    // Two refused children plus the eight refused postings of the child that was read.
    expect(result.refused?.total).toBe(10);
    expect(result.refused?.examples.slice(0, 2)).toEqual([
      { url: 'http://127.0.0.2/sitemap.xml', code: 'SOURCE_URL_OFF_SITE' },
      { url: 'file:///etc/passwd', code: 'SOURCE_URL_SCHEME' },
    ]);
  });

  it('refuses posting-like links and a next page off the site; other links are not postings', async () => {
    requested.length = 0;
    const config = careerSiteConfig.parse({ url: origin, listingUrl: `${origin}/list` });
    const result = await careerSiteAdapter.list(config, { fetcher });
    expect(requested).toEqual(['/list']);
    expect(result.postings.map((p) => p.url)).toEqual([`${origin}/jobs/2`]);
    expect(result.refused).toEqual({
      total: 4,
      byCode: { SOURCE_URL_OFF_SITE: 3, SOURCE_URL_CREDENTIALS: 1 },
      examples: [
        { url: 'https://evil.example/jobs/9', code: 'SOURCE_URL_OFF_SITE' },
        { url: expect.stringContaining('u:p@'), code: 'SOURCE_URL_CREDENTIALS' },
        { url: 'http://127.0.0.2/jobs/4', code: 'SOURCE_URL_OFF_SITE' },
        { url: 'http://[::1]/list?page=2', code: 'SOURCE_URL_OFF_SITE' },
      ],
    });
  });

  it('keeps a bounded number of examples however many URLs it refuses', async () => {
    const checked = Array.from({ length: 500 }, (_, i) => `https://evil.example/jobs/${i}`);
    const html = checked.map((href) => `<a href="${href}">x</a>`).join('');
    const listing = createServer((_, response) =>
      response.writeHead(200, { 'content-type': 'text/html' }).end(html),
    );
    await new Promise<void>((resolve) => listing.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(listing.address() as AddressInfo).port}/list`;
      const result = await careerSiteAdapter.list(
        careerSiteConfig.parse({ url, listingUrl: url }),
        { fetcher },
      );
      expect(result.postings).toEqual([]);
      expect(result.refused?.total).toBe(500);
      expect(result.refused?.byCode).toEqual({ SOURCE_URL_OFF_SITE: 500 });
      expect(result.refused?.examples).toHaveLength(20);
    } finally {
      await new Promise((resolve) => listing.close(resolve));
    }
  });
});
