/**
 * The page's own labels — OpenGraph tags, `<title>`, `<h1>` — read with regexes instead of a DOM:
 * they are needed only when a JobPosting lacks a title or company, and a regex pass over the head
 * costs a fraction of a parse.
 */
import { decodeEntities, findTagEnd, normaliseWhitespace, withoutTags } from './html-text.js';
import { isJsWhitespace } from './words.js';

export interface PageMeta {
  ogTitle: string | null;
  ogSiteName: string | null;
  ogType: string | null;
  /** og:description, else the description meta tag: boards write "<job> at <employer>. <place>." */
  description: string | null;
  title: string | null;
  /** Texts of the page's `<h1>` elements, in order. */
  h1: string[];
}

/*
 * Tags are found by name with a pattern that ends at the name, and their ends with indexOf: a
 * pattern such as `<meta\b(?:[^>"']|"[^"]*"|'[^']*')*>` scans to the end of the page from every
 * `<meta` that has no `>`, so 50 KB of `<meta ` took 2 s and each doubling 4× as long. A tag
 * that is never closed ends the search, as it ends the page for a browser: everything after it
 * is inside that tag.
 */
const META_OPEN = /<meta\b/gi;
const TITLE_OPEN = /<title\b/gi;
const H1_OPEN = /<h1\b/gi;
/** Never page text; an SVG icon's `<title>` ("save-icon") is a tooltip, not the page's title. */
const HIDDEN_OPEN = /<(script|style|template|svg)\b/gi;

/**
 * The page without script, style, template and SVG contents. indexOf-based, not a lazy regex: an
 * unclosed `<script` must cost one scan to the end, not one per later tag.
 */
function withoutHiddenElements(html: string): string {
  let result = '';
  let position = 0;
  let lower: string | undefined;
  HIDDEN_OPEN.lastIndex = 0;
  for (let match = HIDDEN_OPEN.exec(html); match !== null; match = HIDDEN_OPEN.exec(html)) {
    const tagEnd = html.indexOf('>', HIDDEN_OPEN.lastIndex);
    if (tagEnd === -1) break; // no later tag has an end either
    result += html.slice(position, match.index);
    lower ??= html.toLowerCase();
    const close = lower.indexOf(`</${(match[1] ?? '').toLowerCase()}`, tagEnd + 1);
    if (close === -1) return result;
    position = close;
    HIDDEN_OPEN.lastIndex = close + 2;
  }
  return result + html.slice(position);
}

/**
 * Each tag opened by `open` (a pattern ending at the tag's name) as its start and the index just
 * past its `>`, in order; `isQuoteAware` skips `>` inside quoted values.
 */
function* tagsOf(
  html: string,
  open: RegExp,
  isQuoteAware: boolean,
): Generator<{ start: number; nameEnd: number; end: number }> {
  open.lastIndex = 0;
  for (let match = open.exec(html); match !== null; match = open.exec(html)) {
    const nameEnd = open.lastIndex;
    const gt = isQuoteAware ? findTagEnd(html, match.index) : html.indexOf('>', nameEnd) + 1;
    if (gt <= 0) return;
    open.lastIndex = gt; // a caller may move it on, past the element's content
    yield { start: match.index, nameEnd, end: gt };
  }
}

/** The text of each element opened by `open` up to its `</name`, in order; stops at an unclosed one. */
function elementTexts(
  html: string,
  lower: string,
  open: RegExp,
  isQuoteAware: boolean,
  name: string,
  limit: number,
): string[] {
  const texts: string[] = [];
  for (const tag of tagsOf(html, open, isQuoteAware)) {
    if (texts.length >= limit) break;
    const close = lower.indexOf(`</${name}`, tag.end);
    if (close === -1) break;
    const text = fragmentText(html.slice(tag.end, close));
    if (text !== null) texts.push(text);
    open.lastIndex = close;
  }
  return texts;
}

/**
 * A tag's attributes as the pattern
 * `([^\s"'>/=]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>\`]+))` (global) finds them, first of
 * each name winning; read by hand, because that pattern retries from every character of a long
 * run of name characters that no `=` follows (quadratic in the run).
 */
function attributesOf(tag: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  let position = 0;
  while (position < tag.length) {
    if (!isAttributeNameCharacter(tag.charCodeAt(position))) {
      position += 1;
      continue;
    }
    const nameStart = position;
    while (position < tag.length && isAttributeNameCharacter(tag.charCodeAt(position)))
      position += 1;
    const nameEnd = position;
    const value = attributeValueAt(tag, skipWhitespace(tag, nameEnd));
    if (value === null) continue; // no value: the pattern finds nothing in this name either
    attributes[tag.slice(nameStart, nameEnd).toLowerCase()] ??= value.text;
    position = value.end;
  }
  return attributes;
}

/** The `= value` at `from`: its text and where it ends, or null. */
function attributeValueAt(tag: string, from: number): { text: string; end: number } | null {
  if (tag.charCodeAt(from) !== 0x3d) return null;
  const start = skipWhitespace(tag, from + 1);
  const quote = tag.charCodeAt(start);
  if (quote === 0x22 || quote === 0x27) {
    const end = tag.indexOf(quote === 0x22 ? '"' : "'", start + 1);
    return end === -1 ? null : { text: tag.slice(start + 1, end), end: end + 1 };
  }
  let end = start;
  while (end < tag.length && isBareValueCharacter(tag.charCodeAt(end))) end += 1;
  return end === start ? null : { text: tag.slice(start, end), end };
}

function skipWhitespace(text: string, from: number): number {
  let position = from;
  while (isJsWhitespace(text.charCodeAt(position))) position += 1;
  return position;
}

/** `[^\s"'>/=]` */
function isAttributeNameCharacter(code: number): boolean {
  return (
    code === code && // not past the end (NaN)
    !isJsWhitespace(code) &&
    code !== 0x22 &&
    code !== 0x27 &&
    code !== 0x3e &&
    code !== 0x2f &&
    code !== 0x3d
  );
}

/** `[^\s"'=<>\`]` */
function isBareValueCharacter(code: number): boolean {
  return (
    !isJsWhitespace(code) &&
    code !== 0x22 &&
    code !== 0x27 &&
    code !== 0x3d &&
    code !== 0x3c &&
    code !== 0x3e &&
    code !== 0x60
  );
}

/** Text of an HTML fragment: tags removed, entities decoded, whitespace collapsed; null if empty. */
export function fragmentText(html: string): string | null {
  const text = normaliseWhitespace(decodeEntities(withoutTags(html)));
  return text === '' ? null : text;
}

export function readPageMeta(html: string): PageMeta {
  const visible = withoutHiddenElements(html);
  const lower = visible.toLowerCase();
  const meta: PageMeta = {
    ogTitle: null,
    ogSiteName: null,
    ogType: null,
    description: null,
    title: null,
    h1: [],
  };
  for (const tag of tagsOf(visible, META_OPEN, true)) {
    const attributes = attributesOf(visible.slice(tag.nameEnd, tag.end - 1));
    const key = (attributes.property ?? attributes.name ?? '').toLowerCase();
    const content = attributes.content === undefined ? null : fragmentText(attributes.content);
    if (content === null) continue;
    if (key === 'og:title') meta.ogTitle ??= content;
    else if (key === 'og:site_name') meta.ogSiteName ??= content;
    else if (key === 'og:type') meta.ogType ??= content.toLowerCase();
    else if (key === 'og:description' || key === 'description') meta.description ??= content;
  }
  meta.title = elementTexts(visible, lower, TITLE_OPEN, false, 'title', 1)[0] ?? null;
  meta.h1 = elementTexts(visible, lower, H1_OPEN, true, 'h1', 20);
  return meta;
}

const TITLE_SEPARATOR = /(\s+(?:[-–—|·•:]|at|@)\s+)/i;
const SITE_WORDS =
  /\b(?:careers?|jobs?|job board|hiring|karriere|stellenangebote|recrutement|vacanc(?:y|ies)|work for us|offres? d'emploi)\b/i;

/**
 * A job title from a page title such as "Senior Engineer – Acme Careers", "Acme - Senior
 * Engineer", "Job Application for Senior Engineer at Acme" or "Senior Engineer at Acme | Jobs":
 * segments naming the company or the site are dropped, and a last segment after "at" is taken to
 * be the employer.
 */
export function cleanPageTitle(raw: string, company: string | null): string | null {
  const text = raw
    .replace(/^(?:job application for|apply for|job:|stellenangebot:)\s+/i, '')
    .trim();
  const pieces = text.split(TITLE_SEPARATOR);
  const companyKey = company?.toLowerCase() ?? null;
  const segmentCount = Math.ceil(pieces.length / 2);
  let title = '';
  for (let index = 0; index < pieces.length; index += 2) {
    const segment = (pieces[index] ?? '').trim();
    const separator = index > 0 ? (pieces[index - 1] ?? ' ') : '';
    const lower = segment.toLowerCase();
    const isLast = index === pieces.length - 1;
    const isCompany =
      companyKey !== null && (lower === companyKey || lower.startsWith(`${companyKey} `));
    const isSite = segmentCount > 1 && SITE_WORDS.test(segment) && segment.split(/\s+/).length <= 4;
    const isEmployer = index > 0 && isLast && /^\s+(?:at|@)\s+$/i.test(separator);
    if (segment === '' || isCompany || isSite || isEmployer) continue;
    title += title === '' ? segment : `${separator}${segment}`;
  }
  return title === '' || title.length > 150 ? null : title;
}

/**
 * The employer named by a page title that also names the job: "Harbor & Pine - Growth Marketing
 * Manager", "Job Application for X at Pallas Security", "Backend Engineer – Careers – Ferrovia".
 * The segments left after dropping the job title and site words must be a single short name.
 */
export function companyFromPageTitle(pageTitle: string | null, jobTitle: string): string | null {
  if (pageTitle === null) return null;
  const text = pageTitle.replace(/^(?:job application for|apply for)\s+/i, '').trim();
  const jobKey = jobTitle.toLowerCase();
  const rest = text
    .split(TITLE_SEPARATOR)
    .filter((_, index) => index % 2 === 0)
    .map((segment) => segment.trim())
    .filter((segment) => {
      const lower = segment.toLowerCase();
      return segment !== '' && !jobKey.includes(lower) && !lower.includes(jobKey);
    })
    .map((segment) => cleanSiteName(segment))
    .filter((segment): segment is string => segment !== null);
  const [company] = rest;
  return rest.length === 1 && company !== undefined && company.split(/\s+/).length <= 6
    ? company
    : null;
}

/** "Acme Careers" → "Acme". */
export function cleanSiteName(siteName: string): string | null {
  const name = siteName
    .replace(/\s*[-–—|:]?\s*\b(?:careers?|jobs?|job board|karriere|recrutement|hiring)\b.*$/i, '')
    .replace(/^(?:careers?|jobs?)\s+(?:at|@)\s+/i, '')
    .trim();
  return name === '' ? null : name;
}

/**
 * The title for a posting whose structured data has none: the page's single `<h1>` (on a posting
 * page that is the job title far more often than `<title>`, which tends to be "Careers | Acme"),
 * else og:title, else `<title>`, the last two cleaned of the company and site name.
 */
export function titleFromPageMeta(meta: PageMeta, company: string | null): string | null {
  const h1 = meta.h1.length === 1 ? meta.h1[0] : undefined;
  if (h1 !== undefined && h1.length <= 150 && h1.toLowerCase() !== company?.toLowerCase())
    return h1;
  const og = meta.ogTitle === null ? null : cleanPageTitle(meta.ogTitle, company);
  return og ?? (meta.title === null ? null : cleanPageTitle(meta.title, company));
}
