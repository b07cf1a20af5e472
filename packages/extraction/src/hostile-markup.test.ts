/**
 * Pages and documents made of unclosed or deeply nested markup, against every function that reads
 * page text or HTML for the worker: a page of 1 MB of `<meta ` (a few KB gzipped, under every
 * fetch cap) used to take minutes, because scans retried from every `<` to the end of the page,
 * and 1 MB of `<div>` 20 s or more wherever a tree was built of it.
 *
 * Times are CPU time of this process (user + system), not wall time: the bound is for the work a
 * call does, on a 2-core machine shared with other test files. The whole file costs about 19 s of
 * CPU (DOCX and HTML documents 5 s of it), and the growth check runs on one reader of each kind,
 * so that it does not starve the test files that run beside it.
 */
import { buildDocx, buildZip, readZip, seededRandom } from '@gleaner/testing';
import { describe, expect, it } from 'vitest';
import { readDescription } from './description.js';
import { createLazyDom } from './dom.js';
import { extractDocument } from './documents/extract-document.js';
import { findDomPosting } from './dom-posting.js';
import { extractPosting } from './extract-posting.js';
import { htmlToText } from './html-text.js';
import { mayHaveJobPostingItem, MICRODATA, RDFA } from './item-reader.js';
import { findJsonLdBlocks } from './json-ld-scan.js';
import { readPageMeta } from './page-meta.js';
import { requirementsFromHtml } from './requirements.js';
import { sanitiseHtml } from './sanitise-html.js';
import { pageSimhash, textSimhash } from './simhash.js';
import { textSha256 } from './text-sha256.js';
import { pageTokens, visibleText } from './words.js';

const MB = 1024 * 1024;
const HOSTILE_PATTERNS = ['<', '<meta ', '<h1 ', '<svg ', '<!--', '<script'] as const;
/** Elements nested 70,000 to 200,000 deep. */
const NESTING_PATTERNS = ['<div>', '<span><b>', '<table><tr><td>'] as const;
/** Words that send a page without structured data to the DOM heuristics (`mayBeDomPosting`). */
const POSTING_WORDS = '<h1>Engineer</h1><p>Apply for this job</p>';

/** `pattern` repeated to `size` characters. */
function repeated(pattern: string, size: number): string {
  return pattern.repeat(Math.ceil(size / pattern.length)).slice(0, size);
}

/** CPU milliseconds (user + system) that `run` takes. */
async function cpuMs(run: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const docxParts = readZip((await buildDocx({ paragraphs: 1 })).bytes);

/** A DOCX whose one paragraph, and whose title, are `text` (escaped, as Word writes it). */
function docxOf(text: string): Uint8Array {
  const escaped = text.replace(/[&<>]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : '&gt;',
  );
  const encode = (xml: string) => new TextEncoder().encode(xml);
  return buildZip(
    docxParts.map((part) => {
      const xml = new TextDecoder().decode(part.data);
      if (part.name === 'word/document.xml')
        return {
          name: part.name,
          data: encode(
            xml.replace(
              /<w:body>[\s\S]*?<w:sectPr/,
              `<w:body><w:p><w:r><w:t>${escaped}</w:t></w:r></w:p><w:sectPr`,
            ),
          ),
        };
      // The properties part as the hostile text itself, raw: its title is read by hand.
      if (part.name === 'docProps/core.xml')
        return { name: part.name, data: encode(text.slice(0, 200_000)) };
      return part;
    }),
  );
}

/** Every reader of page text or HTML the worker reaches, by name. */
const READERS: Record<string, (html: string) => unknown> = {
  textSha256,
  pageSimhash,
  pageTokens,
  textSimhash,
  extractPosting: (html) => extractPosting(html),
  findJsonLdBlocks,
  readPageMeta,
  microdata: (html) => mayHaveJobPostingItem(html, MICRODATA),
  rdfa: (html) => mayHaveJobPostingItem(html, RDFA),
  domPosting: (html) =>
    findDomPosting(createLazyDom(html)(), readPageMeta(html), { jsonLdTypes: new Set() }),
  readDescription,
  sanitiseHtml,
  htmlToText,
  requirementsFromHtml,
  documentHtml: (html) =>
    extractDocument(new TextEncoder().encode(`<!doctype html>${html}`), {
      mediaType: 'text/html',
    }),
  documentDocx: (html) => extractDocument(docxOf(html)),
};

/**
 * CPU ms a reader may take for 1 MB. Documents get more: 1 MB of `<` is a million character
 * references on their way, in DOCX XML (4 MB, decoded by mammoth's XML parser: 1.1–1.6 s here)
 * and out of the sanitiser (`&lt;`, decoded again for the text: 1.6–2.1 s). Both grow linearly,
 * and documents are read in the parser pool, whose timeout stops them.
 */
const CPU_BOUND_MS: Record<string, number> = { documentHtml: 3000, documentDocx: 3000 };

/** 1 MB pages for `read`: each unclosed pattern, and (but for DOCX) each nesting pattern. */
function hostilePages(name: string): [string, string][] {
  const pages = HOSTILE_PATTERNS.map((pattern): [string, string] => [
    pattern,
    repeated(pattern, MB),
  ]);
  if (name === 'documentDocx') return pages; // no HTML tree: Word's XML is mammoth's own
  return [
    ...pages,
    ...NESTING_PATTERNS.map((pattern): [string, string] => [
      pattern,
      POSTING_WORDS + repeated(pattern, MB - POSTING_WORDS.length),
    ]),
  ];
}

describe('a page of 1 MB of unclosed or nested markup', () => {
  for (const [name, read] of Object.entries(READERS)) {
    const bound = CPU_BOUND_MS[name] ?? 1000;
    it(`is read by ${name} within ${bound} ms of CPU for each pattern`, async () => {
      await read(repeated('<p>warm up</p>', 4096));
      const times: Record<string, number> = {};
      for (const [pattern, page] of hostilePages(name)) {
        times[pattern] = Math.round(await cpuMs(() => read(page)));
      }
      const slow = Object.entries(times).filter(([, ms]) => ms >= bound);
      expect(slow, `CPU ms per pattern: ${JSON.stringify(times)}`).toEqual([]);
    }, 120_000);
  }
});

/** Markup that opens and never closes, quotes, comments and references, mixed with words. */
// prettier-ignore
const SOUP_PIECES = [
  '<', '<meta ', '<h1 ', '<svg ', '<!--', '<script', '<title ', '<style', '</', '</h1', '&',
  '&lt;p ', '&#', 'itemtype=', 'typeof=', '"', "'", '=', ' ', 'word ', 'Engineer ', 'Σ', '-->',
  '</script', 'content=', 'property="og:title" ', '\n',
];

/** Whole tags that mostly open, and nest as deep as the page is long, among words. */
// prettier-ignore
const NESTING_SOUP_PIECES = [
  '<div>', '<div class="job">', '<span>', '<b>', '<table>', '<tr>', '<td>', '<li>', '<p>',
  '<section>', '<a href="/jobs/1">', '</a>', '</div>', '<br>', '<svg>', '<!-- x -->', 'Apply ',
  'the role ', 'word ',
];

function tagSoup(size: number, seed: number, pieces: readonly string[] = SOUP_PIECES): string {
  const next = seededRandom(seed);
  const chosen: string[] = [];
  let length = 0;
  while (length < size) {
    const piece = pieces[Math.floor(next() * pieces.length)]!;
    chosen.push(piece);
    length += piece.length;
  }
  return chosen.join('').slice(0, size);
}

/**
 * One reader of each kind: the invisible-markup scan (fingerprints), the tag-by-name reader
 * (metadata), the JSON-LD scan and the description text walk on unclosed markup; the two tree
 * builders (cheerio behind the DOM heuristics, htmlparser2 behind the sanitiser) on nesting. The
 * 1 MB bound above covers every reader; a quadratic one would take 16× as long for 4× the input.
 */
const GROWTH_CHECKS: [string, readonly string[]][] = [
  ['textSha256', SOUP_PIECES],
  ['readPageMeta', SOUP_PIECES],
  ['findJsonLdBlocks', SOUP_PIECES],
  ['htmlToText', SOUP_PIECES],
  ['domPosting', NESTING_SOUP_PIECES],
  ['sanitiseHtml', NESTING_SOUP_PIECES],
];

describe('random tag soups', () => {
  it('take at most about linear time: 4 MB no more than 8× what 1 MB takes', async () => {
    const ratios: Record<string, number> = {};
    for (const [name, pieces] of GROWTH_CHECKS) {
      const read = READERS[name]!;
      await read(tagSoup(64 * 1024, 1, pieces)); // warm up
      const smallSoup = tagSoup(MB, 1, pieces);
      const largeSoup = tagSoup(4 * MB, 4, pieces);
      const small = await cpuMs(() => read(smallSoup));
      // A floor of 20 ms keeps timer noise on very fast readers from reading as growth.
      const ratio = async () => (await cpuMs(() => read(largeSoup))) / Math.max(small, 20);
      // A pause for garbage collection, or a loaded machine's cache misses, only ever add time:
      // a ratio over the bound is measured up to twice more and the least kept. A linear reader
      // measured up to 5.6 on a loaded CI machine; a quadratic one measures 16× every time.
      let measured = await ratio();
      for (let again = 0; again < 2 && measured > 8; again += 1)
        measured = Math.min(measured, await ratio());
      ratios[name] = Math.round(measured * 10) / 10;
    }
    const superLinear = Object.entries(ratios).filter(([, ratio]) => ratio > 8);
    expect(superLinear, `4 MB / 1 MB CPU time: ${JSON.stringify(ratios)}`).toEqual([]);
  }, 300_000);

  it('come out of the scanners as the patterns they replace would make them', () => {
    // The patterns the scanners stand in for, on soups small enough for their quadratic time.
    const INVISIBLE =
      /<(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>|<!--[\s\S]*?-->|<[^>]*>|&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);/gi;
    const next = seededRandom(31);
    const extra = ['>', '<script>', '</script >', '<p>', '</p>', '<!-- x -->', '&amp;'];
    for (let round = 0; round < 300; round++) {
      let soup = tagSoup(200 + Math.floor(next() * 400), round);
      for (let index = 0; index < 6; index++) {
        const at = Math.floor(next() * soup.length);
        soup = soup.slice(0, at) + extra[Math.floor(next() * extra.length)]! + soup.slice(at);
      }
      expect(visibleText(soup)).toBe(soup.replace(INVISIBLE, ' '));
      const itemtype = /\bitemtype\s*=\s*["']?[^"'>]*JobPosting/i;
      const withPosting = soup.replace('word', 'JobPosting');
      expect(mayHaveJobPostingItem(withPosting, MICRODATA)).toBe(itemtype.test(withPosting));
    }
  });
});
