/**
 * The page's own labels — OpenGraph tags, `<title>`, `<h1>` — read with regexes instead of a DOM:
 * they are needed only when a JobPosting lacks a title or company, and a regex pass over the head
 * costs a fraction of a parse.
 */
import { decodeEntities, normaliseWhitespace } from './html-text.js';

export interface PageMeta {
  ogTitle: string | null;
  ogSiteName: string | null;
  ogType: string | null;
  title: string | null;
  /** Texts of the page's `<h1>` elements, in order. */
  h1: string[];
}

const META_TAG = /<meta\b((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
const ATTRIBUTE = /([^\s"'>/=]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))/g;
const TITLE_OPEN = /<title\b[^>]*>/i;
const H1_OPEN = /<h1\b(?:[^>"']|"[^"]*"|'[^']*')*>/gi;
/** Never page text; an SVG icon's `<title>` ("save-icon") is a tooltip, not the page's title. */
const HIDDEN_OPEN = /<(script|style|template|svg)\b[^>]*>/gi;

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
    result += html.slice(position, match.index);
    lower ??= html.toLowerCase();
    const close = lower.indexOf(`</${(match[1] ?? '').toLowerCase()}`, HIDDEN_OPEN.lastIndex);
    if (close === -1) return result;
    position = close;
    HIDDEN_OPEN.lastIndex = close + 2;
  }
  return result + html.slice(position);
}

/** The text of each element opened by `open` up to its `</name`, in order; stops at an unclosed one. */
function elementTexts(html: string, open: RegExp, name: string, limit: number): string[] {
  const texts: string[] = [];
  const lower = html.toLowerCase();
  open.lastIndex = 0;
  for (
    let match = open.exec(html);
    match !== null && texts.length < limit;
    match = open.exec(html)
  ) {
    const close = lower.indexOf(`</${name}`, open.lastIndex);
    if (close === -1) break;
    const text = fragmentText(html.slice(open.lastIndex, close));
    if (text !== null) texts.push(text);
    open.lastIndex = close;
  }
  return texts;
}

function attributesOf(tag: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  ATTRIBUTE.lastIndex = 0;
  for (let match = ATTRIBUTE.exec(tag); match !== null; match = ATTRIBUTE.exec(tag)) {
    const name = (match[1] ?? '').toLowerCase();
    attributes[name] ??= match[2] ?? match[3] ?? match[4] ?? '';
  }
  return attributes;
}

/** Text of an HTML fragment: tags removed, entities decoded, whitespace collapsed; null if empty. */
export function fragmentText(html: string): string | null {
  const text = normaliseWhitespace(decodeEntities(html.replace(/<[^>]*>/g, ' ')));
  return text === '' ? null : text;
}

export function readPageMeta(html: string): PageMeta {
  const visible = withoutHiddenElements(html);
  const meta: PageMeta = { ogTitle: null, ogSiteName: null, ogType: null, title: null, h1: [] };
  META_TAG.lastIndex = 0;
  for (let match = META_TAG.exec(visible); match !== null; match = META_TAG.exec(visible)) {
    const attributes = attributesOf(match[1] ?? '');
    const key = (attributes.property ?? attributes.name ?? '').toLowerCase();
    const content = attributes.content === undefined ? null : fragmentText(attributes.content);
    if (content === null) continue;
    if (key === 'og:title') meta.ogTitle ??= content;
    else if (key === 'og:site_name') meta.ogSiteName ??= content;
    else if (key === 'og:type') meta.ogType ??= content.toLowerCase();
  }
  const titleOpen = new RegExp(TITLE_OPEN.source, 'gi');
  meta.title = elementTexts(visible, titleOpen, 'title', 1)[0] ?? null;
  meta.h1 = elementTexts(visible, H1_OPEN, 'h1', 20);
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
