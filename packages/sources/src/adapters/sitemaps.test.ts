import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  commonSitemapUrls,
  MAX_INFLATED_SITEMAP_BYTES,
  parseSitemap,
  sitemapXml,
} from './sitemaps.js';

const urlset = (locs: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((loc) => `<url><loc>${loc}</loc></url>`)
    .join('')}</urlset>`;

describe('parseSitemap', () => {
  it('reads the locations of a urlset, entities and CDATA included', () => {
    const xml = urlset([
      'https://a.example/jobs/1',
      '  https://a.example/careers/job?id=2&amp;lang=en  ',
      '<![CDATA[https://a.example/jobs/3]]>',
      '',
    ]);
    expect(parseSitemap(xml, 'https://a.example/sitemap.xml')).toEqual({
      kind: 'urlset',
      locations: [
        'https://a.example/jobs/1',
        'https://a.example/careers/job?id=2&lang=en',
        'https://a.example/jobs/3',
      ],
      truncated: false,
    });
  });

  it('reads the children of a sitemap index, and only <sitemap><loc>', () => {
    const xml = `<?xml version="1.0"?><sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:sitemap><sm:loc>https://a.example/s1.xml.gz</sm:loc><sm:lastmod>2026-01-01</sm:lastmod></sm:sitemap>
      <sm:sitemap><sm:loc>https://a.example/s2.xml</sm:loc></sm:sitemap>
      <sm:url><sm:loc>https://a.example/not-a-child</sm:loc></sm:url>
    </sm:sitemapindex>`;
    expect(parseSitemap(xml, 'https://a.example/index.xml')).toMatchObject({
      kind: 'index',
      locations: ['https://a.example/s1.xml.gz', 'https://a.example/s2.xml'],
    });
  });

  it('ignores <loc> elsewhere (image sitemaps, nested elements)', () => {
    const xml = `<urlset xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"><url><loc>https://a.example/jobs/1</loc><image:image><image:loc>https://a.example/logo.png</image:loc></image:image></url></urlset>`;
    expect(parseSitemap(xml, 'x').locations).toEqual(['https://a.example/jobs/1']);
  });

  it('refuses a document that is not a sitemap, naming its root', () => {
    expect(() => parseSitemap('<!DOCTYPE html><html><body>hi</body></html>', 'u')).toThrowError(
      expect.objectContaining({ code: 'SOURCE_SITEMAP_INVALID', retryClass: 'permanent' }),
    );
    expect(() => parseSitemap('User-agent: *\nAllow: /\n', 'u')).toThrowError(/not a sitemap/);
  });
});

describe('sitemapXml', () => {
  it('inflates a gzipped file and reads a plain one as UTF-8', async () => {
    const xml = urlset(['https://a.example/jobs/café']);
    expect(await sitemapXml(gzipSync(xml), 'u')).toBe(xml);
    expect(await sitemapXml(Buffer.from(`\uFEFF${xml}`), 'u')).toBe(xml);
  });

  it('refuses a gzip bomb once the output passes the cap', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(64 * 1024);
    await expect(sitemapXml(bomb, 'https://a.example/s.xml.gz', 1024 * 1024)).rejects.toMatchObject(
      {
        code: 'SOURCE_SITEMAP_TOO_LARGE',
        retryClass: 'permanent',
      },
    );
  });

  it('stops a gzip bomb at 10 MiB of output by default, and reads a full 50,000-entry file', async () => {
    // 64 MiB of spaces gzip to about 64 KB: the cap, not the input, bounds what it costs.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(128 * 1024);
    await expect(sitemapXml(bomb, 'https://a.example/s.xml.gz')).rejects.toMatchObject({
      code: 'SOURCE_SITEMAP_TOO_LARGE',
      message: `https://a.example/s.xml.gz inflates to more than ${MAX_INFLATED_SITEMAP_BYTES} bytes`,
    });
    expect(MAX_INFLATED_SITEMAP_BYTES).toBe(10 * 1024 * 1024);

    const entries = Array.from(
      { length: 50_000 },
      (_, index) =>
        `<url><loc>https://careers.example-company.com/en/jobs/${1_000_000 + index}/senior-software-engineer-platform</loc>` +
        '<lastmod>2024-05-01T12:00:00+00:00</lastmod><changefreq>daily</changefreq><priority>0.8</priority></url>',
    );
    const xml = `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${entries.join('')}</urlset>`;
    const parsed = parseSitemap(await sitemapXml(gzipSync(xml), 'u'), 'u');
    expect(parsed.locations).toHaveLength(50_000);
  });

  it('refuses elements nested past any sitemap quickly, as invalid', () => {
    // 8 MB of unclosed elements: the XML parser's open-element list made this quadratic.
    const nested = `<urlset>${'<a>'.repeat(2_800_000)}`;
    const started = performance.now();
    expect(() => parseSitemap(nested, 'u')).toThrowError(
      expect.objectContaining({ code: 'SOURCE_SITEMAP_INVALID' }),
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('refuses a corrupt gzip file as not a sitemap', async () => {
    const corrupt = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(64, 0xff)]);
    await expect(sitemapXml(corrupt, 'u')).rejects.toMatchObject({
      code: 'SOURCE_SITEMAP_INVALID',
    });
  });
});

describe('commonSitemapUrls', () => {
  it('tries the usual places at the origin, then beside the configured page', () => {
    expect(commonSitemapUrls(new URL('https://a.example/'))).toEqual([
      'https://a.example/sitemap.xml',
      'https://a.example/sitemap_index.xml',
      'https://a.example/careers/sitemap.xml',
      'https://a.example/jobs/sitemap.xml',
    ]);
    expect(commonSitemapUrls(new URL('https://a.example/en/careers?x=1#top')).at(-1)).toBe(
      'https://a.example/en/careers/sitemap.xml',
    );
    expect(commonSitemapUrls(new URL('https://a.example/careers/'))).toHaveLength(4);
  });
});
