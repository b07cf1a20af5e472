import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { commonSitemapUrls, parseSitemap, sitemapXml } from './sitemaps.js';

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
