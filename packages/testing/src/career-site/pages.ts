import { createRandom, pick } from '../random.js';
import { PLACES, ROLES, SENIORITIES, TEAMS } from './pools.js';
import type { PostingSpec, SalarySpec, ScriptTagStyle } from './postings.js';

/**
 * The HTML and XML the site serves: posting pages (JSON-LD in the script tags real sites use,
 * filled to `pageBytes` with the markup a real page carries), listing pages and sitemaps.
 */

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const SCRIPT_OPEN_TAGS: Record<ScriptTagStyle, [open: string, close: string]> = {
  plain: ['<script type="application/ld+json">', '</script>'],
  'single-quoted-extra': ['<script type=\'application/ld+json\' data-rh="true">', '</script>'],
  unquoted: ['<script type=application/ld+json>', '</script>'],
  'id-nonce': [
    '<script id="job-posting-ld" type="application/ld+json" nonce="r4nd0mN0nce">',
    '</script>',
  ],
  'upper-case': ['<SCRIPT TYPE="application/ld+json">', '</SCRIPT>'],
};

function serializeJsonLd(value: unknown, spec: PostingSpec): string {
  const json = JSON.stringify(value, null, spec.prettyJson ? 2 : undefined);
  // "</script" inside the JSON would end the element early; escaping every "</" (valid JSON) is
  // what several frameworks do, so some pages do it.
  return spec.escapeSlashes
    ? json.replaceAll('</', '<\\/')
    : json.replace(/<\/(script)/gi, '<\\/$1');
}

function jsonLdScript(
  value: unknown,
  spec: PostingSpec,
  style: ScriptTagStyle = spec.scriptStyle,
): string {
  const [open, close] = SCRIPT_OPEN_TAGS[style];
  return `${open}${serializeJsonLd(value, spec)}${close}`;
}

const STYLE_SHEET = `<style>
:root{--ink:#1d2433;--muted:#5b6478;--accent:#2456d6;--line:#e3e6ee}
*{box-sizing:border-box}body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--ink)}
.site-header,.site-footer{padding:16px 32px;border-bottom:1px solid var(--line)}.site-footer{border-top:1px solid var(--line)}
.site-header nav a,.site-footer a{margin-right:16px;color:var(--muted);text-decoration:none}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,1fr);gap:48px;max-width:1120px;margin:0 auto;padding:32px}
.job-title{font-size:2rem;margin:0 0 8px}.job-meta{display:flex;gap:16px;padding:0;list-style:none;color:var(--muted)}
.apply-button{display:inline-block;padding:12px 20px;background:var(--accent);color:#fff;border-radius:6px}
.similar-jobs .card{padding:12px 0;border-bottom:1px solid var(--line)}
</style>`;

export function locationText(spec: PostingSpec): string {
  const place = spec.places[0];
  const office =
    place === undefined
      ? ''
      : [place.city, place.region, place.country].filter((part) => part !== null).join(', ');
  if (spec.remote === null) return office;
  return office === ''
    ? `Remote (${spec.remoteCountry})`
    : `Remote (${spec.remoteCountry}) or ${office}`;
}

function salaryText(salary: SalarySpec | null): string {
  if (salary === null) return 'Salary on request';
  const currency = salary.currency.toUpperCase();
  const per = salary.shape === 'no-unit' ? '' : ` per ${salary.unit.toLowerCase()}`;
  const amount = salary.min === salary.max ? `${salary.min}` : `${salary.min}\u2013${salary.max}`;
  return `${currency} ${amount}${per}`;
}

export function renderPostingPage(
  spec: PostingSpec,
  jsonLd: Record<string, unknown>,
  origin: string,
  url: string,
  pageBytes: number,
): string {
  const title = escapeHtml(spec.title);
  const company = escapeHtml(spec.company);
  const plainDescription = spec.description
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

  const breadcrumb = {
    '@type': 'BreadcrumbList',
    itemListElement: [
      { '@type': 'ListItem', position: 1, name: 'Jobs', item: `${origin}/jobs` },
      { '@type': 'ListItem', position: 2, name: spec.title, item: url },
    ],
  };
  const structuredData = spec.inGraph
    ? {
        '@context': 'https://schema.org',
        '@graph': [{ '@type': 'WebPage', '@id': url, name: spec.title, breadcrumb }, jsonLd],
      }
    : jsonLd;

  const head = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title} \u2013 ${company} Careers</title>`,
    `<meta name="description" content="${escapeHtml(plainDescription.slice(0, 155))}">`,
    `<link rel="canonical" href="${url}">`,
    `<meta property="og:type" content="website"><meta property="og:title" content="${title}"><meta property="og:url" content="${url}">`,
    STYLE_SHEET,
    // An ordinary script before the structured data, as tag managers put there.
    "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());gtag('config','G-FIXTURE');</script>",
    '<script src="/static/app.js" defer></script>',
    spec.hasBreadcrumbBlock
      ? jsonLdScript({ '@context': 'https://schema.org', ...breadcrumb }, spec, 'plain')
      : '',
    jsonLdScript(structuredData, spec),
    '</head>',
  ].join('\n');

  const body = [
    '<body>',
    `<header class="site-header"><a class="logo" href="/jobs">${company} Careers</a><nav><a href="/jobs">All jobs</a><a href="#teams">Teams</a><a href="#benefits">Benefits</a><a href="#locations">Locations</a></nav></header>`,
    '<main id="main">',
    '<article class="job">',
    `<nav class="breadcrumbs"><a href="/jobs">Jobs</a> / <span>${title}</span></nav>`,
    `<h1 class="job-title">${title}</h1>`,
    `<p class="job-company">${company}</p>`,
    `<p class="job-location">${escapeHtml(locationText(spec))}</p>`,
    `<ul class="job-meta"><li>${escapeHtml(Array.isArray(spec.employmentType) ? spec.employmentType.join(', ') : spec.employmentType)}</li><li>Posted <time datetime="${spec.datePosted}">${spec.datePosted}</time></li><li>${escapeHtml(salaryText(spec.salary))}</li></ul>`,
    `<div class="job-description">\n${spec.description}\n</div>`,
    '<a class="apply-button" href="#apply" id="apply">Apply now</a>',
    '</article>',
  ].join('\n');

  const footer = [
    '</main>',
    `<footer class="site-footer"><p>&copy; 2026 ${company}</p><nav><a href="#privacy">Privacy</a><a href="#terms">Terms</a><a href="#accessibility">Accessibility</a><a href="#cookies">Cookie settings</a></nav></footer>`,
    `<script>window.__CAREERS__={"jobId":"${spec.id}","locale":"en"};</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');

  // Fill up to the requested size with "similar jobs" cards: markup a real page would carry
  // and a DOM parser has to get through.
  const fixedBytes = Buffer.byteLength(head) + Buffer.byteLength(body) + Buffer.byteLength(footer);
  const random = createRandom(spec.fillerSeed);
  const cards: string[] = [];
  let fillerBytes = 0;
  const fillerTarget = pageBytes - fixedBytes - 80; // 80: the aside's own tags
  while (fillerBytes < fillerTarget) {
    const place = pick(random, PLACES);
    const card = `<li class="card"><a class="similar-link" href="/jobs">${escapeHtml(
      `${pick(random, SENIORITIES)}${pick(random, ROLES).name}`,
    )}</a><span class="card-location">${escapeHtml(place.city)}, ${place.country}</span><span class="card-team">${pick(random, TEAMS)}</span></li>`;
    cards.push(card);
    fillerBytes += Buffer.byteLength(card) + 1;
  }
  const aside =
    cards.length === 0
      ? ''
      : `<aside class="similar-jobs"><h2>Similar jobs</h2><ul>\n${cards.join('\n')}\n</ul></aside>\n`;
  return `${head}\n${body}\n${aside}${footer}`;
}

/** What a listing page or a sitemap shows of a published posting (a catalog record). */
interface ListedPosting {
  spec: PostingSpec;
  posting: { path: string; url: string };
  lastModified: number;
}

export function renderListingPage(
  company: string,
  links: readonly ListedPosting[],
  page: number,
  hasNext: boolean,
): string {
  const items = links
    .map(
      (record) =>
        `<li><a class="job-link" href="${escapeHtml(record.posting.path)}">${escapeHtml(record.spec.title)}</a> <span class="job-location">${escapeHtml(locationText(record.spec))}</span></li>`,
    )
    .join('\n');
  const companyHtml = escapeHtml(company);
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    `<head><meta charset="utf-8"><title>Jobs at ${companyHtml}${page > 1 ? ` \u2013 page ${page}` : ''}</title></head>`,
    '<body>',
    `<h1>Open positions at ${companyHtml}</h1>`,
    `<ul class="job-list">\n${items}\n</ul>`,
    `<nav class="pagination">${page > 1 ? `<a rel="prev" href="/jobs?page=${page - 1}">Previous</a> ` : ''}${hasNext ? `<a rel="next" href="/jobs?page=${page + 1}">Next</a>` : ''}</nav>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

export function renderSitemap(records: readonly ListedPosting[]): string {
  const urls = records
    .map(
      (record) =>
        `<url><loc>${escapeXml(record.posting.url)}</loc><lastmod>${new Date(record.lastModified).toISOString()}</lastmod></url>`,
    )
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}

/** Pages a whole-site sitemap lists beside the postings (`sitemaps: 'index'`). */
const NON_POSTING_PAGES = ['/', '/about', '/jobs', '/blog/how-we-hire', '/careers'];

export function renderPagesSitemap(origin: string): string {
  const urls = NON_POSTING_PAGES.map((path) => `<url><loc>${origin}${path}</loc></url>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}

export function renderSitemapIndex(origin: string): string {
  const children = [
    `${origin}/sitemaps/postings-1.xml.gz`,
    `${origin}/sitemaps/postings-2.xml`,
    `${origin}/sitemaps/pages.xml`,
    // Indexes that list themselves exist; a crawler must not go round in circles.
    `${origin}/sitemaps/index.xml`,
  ]
    .map((loc) => `<sitemap><loc>${loc}</loc></sitemap>`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${children}\n</sitemapindex>\n`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}
