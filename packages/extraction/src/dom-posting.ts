/**
 * A posting without any structured data, read from the page's markup — only when the page
 * clearly is one posting. The bar (all of these):
 *
 * - a title: the page's single `<h1>` (or a known ATS title element, or og:title);
 * - at least two posting sections among its headings ("Responsibilities", "What you'll do",
 *   "Requirements", "What we offer" …), one of which is about the work or the candidate (a
 *   careers landing page has "Benefits" and "Why join us" too);
 * - a way to apply (a link, button or form saying "apply");
 * - a description: the element holding those sections, with some substance;
 *
 * and none of: structured data saying the page is something else (checked by the caller), a
 * blog byline, a list of three or more links to other postings in the main content (a search
 * result or careers index), or a title saying the posting is gone ("no longer available").
 *
 * Every field found here has provenance `dom`.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { readDescription } from './description.js';
import { childElements, type DomElement } from './dom.js';
import { normaliseDate } from './dates.js';
import { normaliseEmploymentType } from './employment-type.js';
import { htmlToText, normaliseWhitespace } from './html-text.js';
import { parseLocationText, type ParsedLocation } from './location.js';
import { cleanPageTitle, cleanSiteName, companyFromPageTitle, type PageMeta } from './page-meta.js';
import { requirementsFromBlocks } from './requirements.js';
import { findSalaryInText, parseSalaryText, type Salary } from './salary.js';
import type { ExtractedPosting } from './types.js';

/** Section headings of a posting, by what they are about. */
const SECTION_PATTERNS: readonly [kind: 'core' | 'other', pattern: RegExp][] = [
  [
    'core',
    /^(?:(?:key|main|your|the)\s+)?(?:responsibilities|duties|tasks)\b|^what\s+you(?:'ll|\s+will)\s+(?:do|be\s+doing|work\s+on)\b|^(?:about\s+(?:the|this)\s+(?:role|job|position)|the\s+role|your\s+role|role\s+overview|the\s+opportunity|job\s+description|position\s+summary|your\s+mission|in\s+this\s+role)\b/,
  ],
  [
    'core',
    /^(?:(?:minimum|basic|preferred|required|key|essential)\s+)?(?:requirements|qualifications|skills)\b|^what\s+(?:you(?:'ll|\s+will)?\s+(?:need|bring|have)|we(?:'re|\s+are)\s+looking\s+for|we\s+look\s+for)\b|^(?:who\s+you\s+are|about\s+you|your\s+profile|you\s+have|you\s+bring|must[\s-]haves?|skills\s+(?:and|&)\s+experience|the\s+ideal\s+candidate)\b/,
  ],
  [
    'core',
    /^(?:(?:ihre|deine)\s+aufgaben|aufgaben|(?:ihr|dein)\s+profil|anforderungen|vos\s+missions|missions|profil\s+recherché|wat\s+ga\s+je\s+doen|wat\s+vragen\s+wij|jouw\s+profiel|responsabilidades|requisitos)(?![\p{L}\p{N}])/u,
  ],
  [
    'other',
    /^(?:nice[\s-]to[\s-]haves?|bonus\s+points|benefits|perks|what\s+we\s+offer|why\s+join\s+us|why\s+you'll\s+love|compensation|salary|how\s+to\s+apply|wir\s+bieten|was\s+wir\s+bieten|avantages)\b/,
  ],
];

const GONE =
  /\b(?:page\s+not\s+found|not\s+found|404|no\s+longer\s+(?:available|accepting|open|active)|(?:position|job|vacancy|role)\s+(?:has\s+been|is)\s+(?:filled|closed)|has\s+expired|job\s+expired|does\s+not\s+exist)\b/i;
const APPLY = /\b(?:apply|bewerben|jetzt\s+bewerben|postuler|candidater)\b/i;
const JOB_LINK =
  /\/(?:jobs?|careers?|positions?|vacanc(?:y|ies)|openings?|stellen(?:angebote)?|postings?|o)\/[^/?#]+|[?&](?:gh_jid|jobid|job_id|jid)=/i;
const MIN_DESCRIPTION_CHARS = 200;

function headingKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/^[^a-zäöüéè]+/, '')
    .replace(/[\s:.?!]+$/, '')
    .trim();
}

function sectionKind(text: string): 'core' | 'other' | null {
  if (text.length > 80) return null;
  const key = headingKey(text);
  for (const [kind, pattern] of SECTION_PATTERNS) if (pattern.test(key)) return kind;
  return null;
}

function textOf(_$: CheerioAPI, element: DomElement): string {
  return normaliseWhitespace(textContent(element));
}

type TreeNode = { type?: string; data?: string; children?: TreeNode[] };

/** Like cheerio's text(), without wrapping each node in a Cheerio object. */
function textContent(node: TreeNode): string {
  if (node.type === 'text') return node.data ?? '';
  if (node.children === undefined || node.type === 'comment') return '';
  let text = '';
  for (const child of node.children) text += textContent(child);
  return text;
}

// ---------------------------------------------------------------------------------------------
// The page index: one walk, JS predicates. Compiling CSS selector lists (`[class*="x" i], …`)
// for each query cost more than everything else on a typical page, ten times a cheerio parse.

type Node = { parent?: unknown; type?: string; name?: string; nextSibling?: unknown };

interface PageIndex {
  /** Every element, in document order. */
  elements: DomElement[];
  /** Roots of page furniture: asides, footers, navigation, site headers, "similar jobs". */
  furniture: Set<DomElement>;
}

const FURNITURE_TAGS = new Set(['aside', 'footer', 'nav']);
const FURNITURE_CLASS = /\bsite-header\b|similar|related|other-jobs|more-jobs/i;
const DESCRIPTION_CLASS =
  /description|job-?details|posting-page|job-body|job-content|entry-content|job_description/i;
const TITLE_CLASS = /\bapp-title\b|job[-_]title|posting-title/i;

/** class, id and the data attributes ATS templates name their parts with. */
function hintsOf(element: DomElement): string {
  const attributes = element.attribs;
  return `${attributes.class ?? ''} ${attributes.id ?? ''} ${attributes['data-automation-id'] ?? ''} ${attributes['data-ui'] ?? ''} ${attributes['data-qa'] ?? ''}`;
}

function parentElement(element: DomElement): DomElement | null {
  const parent = (element as Node).parent as (DomElement & Node) | null | undefined;
  return parent !== null && parent !== undefined && 'attribs' in parent ? parent : null;
}

function indexPage($: CheerioAPI): PageIndex {
  // A walk of the tree in document order; even `$('*')` costs a selector engine run.
  const elements: DomElement[] = [];
  const stack: DomElement[] = childElements($.root()[0] as unknown as DomElement).reverse();
  while (stack.length > 0) {
    const element = stack.pop() as DomElement;
    elements.push(element);
    const children = childElements(element);
    for (let index = children.length - 1; index >= 0; index--)
      stack.push(children[index] as DomElement);
  }
  const furniture = new Set<DomElement>();
  for (const element of elements) {
    const name = element.name;
    const isSiteHeader = name === 'header' && parentElement(element)?.name === 'body';
    if (
      FURNITURE_TAGS.has(name) ||
      isSiteHeader ||
      element.attribs.role === 'banner' ||
      FURNITURE_CLASS.test(element.attribs.class ?? '') ||
      FURNITURE_CLASS.test(element.attribs.id ?? '')
    )
      furniture.add(element);
  }
  return { elements, furniture };
}

/** Whether `ancestor` contains `node`, by walking up from `node` (cheerio's find() scans down). */
function contains(ancestor: unknown, node: unknown): boolean {
  for (
    let current = (node as Node | null)?.parent;
    current !== null && current !== undefined;
    current = (current as Node).parent
  ) {
    if (current === ancestor) return true;
  }
  return false;
}

/** Whether an element lies outside the page furniture. */
function isInMainContent(page: PageIndex, element: DomElement): boolean {
  if (page.furniture.size === 0) return true;
  for (
    let node: unknown = element;
    node !== null && node !== undefined;
    node = (node as Node).parent
  ) {
    if (page.furniture.has(node as DomElement)) return false;
  }
  return true;
}

const SECTION_CANDIDATE_TAGS = new Set(['h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'b', 'dt']);

function isSectionCandidate($: CheerioAPI, element: DomElement): boolean {
  if (SECTION_CANDIDATE_TAGS.has(element.name)) return true;
  // A paragraph is a heading only when it is short and nothing but that label.
  if (element.name === 'p') return childElements(element).length <= 1;
  return /section-title|heading/i.test(element.attribs.class ?? '');
}

/** Heading-like elements naming posting sections, in document order. */
function findSections(
  $: CheerioAPI,
  page: PageIndex,
): { element: DomElement; kind: 'core' | 'other' }[] {
  const sections: { element: DomElement; kind: 'core' | 'other' }[] = [];
  for (const element of page.elements) {
    if (!isSectionCandidate($, element)) continue;
    const text = textOf($, element);
    if (text === '' || text.length > 80) continue;
    const kind = sectionKind(text);
    if (kind === null || !isInMainContent(page, element)) continue;
    // Nested matches (<h3><strong>Requirements</strong></h3>) count once.
    if (
      sections.some(
        (section) => contains(section.element, element) || contains(element, section.element),
      )
    )
      continue;
    sections.push({ element, kind });
  }
  return sections;
}

function findTitle($: CheerioAPI, page: PageIndex, meta: PageMeta): string | null {
  const h1s = page.elements.filter((element) => element.name === 'h1' && textOf($, element) !== '');
  if (h1s.length === 1) return textOf($, h1s[0] as DomElement);
  const specific = page.elements.find(
    (element) =>
      TITLE_CLASS.test(element.attribs.class ?? '') ||
      element.attribs['data-automation-id'] === 'jobPostingHeader' ||
      element.attribs['data-ui'] === 'job-title' ||
      (element.name === 'h2' &&
        /posting-headline/.test(parentElement(element)?.attribs.class ?? '')),
  );
  if (specific !== undefined && textOf($, specific) !== '') return textOf($, specific);
  const main = h1s.find((element) => isInMainContent(page, element));
  if (main !== undefined) return textOf($, main);
  return meta.ogTitle === null ? null : cleanPageTitle(meta.ogTitle, null);
}

function hasApplyAction($: CheerioAPI, page: PageIndex): boolean {
  for (const element of page.elements) {
    const name = element.name;
    const attributes = element.attribs;
    const isInput =
      name === 'input' && (attributes.type === 'submit' || attributes.type === 'button');
    if (name !== 'a' && name !== 'button' && name !== 'form' && !isInput) continue;
    const label = name === 'form' ? '' : (attributes.value ?? textOf($, element));
    if (APPLY.test(label)) return true;
    if (
      /apply|application|bewerb/i.test(
        `${attributes.href ?? ''} ${attributes.id ?? ''} ${attributes.class ?? ''} ${attributes.action ?? ''}`,
      )
    )
      return true;
  }
  return false;
}

function looksLikeBlogPost(page: PageIndex): boolean {
  let hasAuthor = false;
  let hasDate = false;
  for (const element of page.elements) {
    const className = element.attribs.class ?? '';
    if (
      element.attribs.rel === 'author' ||
      /\b(?:byline|post-author|entry-author)\b|author-name/i.test(className)
    )
      hasAuthor = true;
    if (
      (element.name === 'time' && element.attribs.pubdate !== undefined) ||
      /\b(?:post-date|entry-date|published)\b|post-meta/i.test(className)
    )
      hasDate = true;
  }
  return hasAuthor && hasDate;
}

function countJobLinks($: CheerioAPI, page: PageIndex): number {
  const targets = new Set<string>();
  for (const element of page.elements) {
    const href = element.name === 'a' ? element.attribs.href : undefined;
    if (href === undefined || !JOB_LINK.test(href) || /apply/i.test(href)) continue;
    if (APPLY.test(textOf($, element)) || !isInMainContent(page, element)) continue;
    targets.add(href.replace(/[#?].*$/, ''));
  }
  return targets.size;
}

/** The lowest element containing every given element. */
function commonAncestor(elements: readonly DomElement[]): DomElement | null {
  const [firstElement, ...rest] = elements;
  if (firstElement === undefined) return null;
  for (
    let candidate = parentElement(firstElement);
    candidate !== null;
    candidate = parentElement(candidate)
  ) {
    if (rest.every((element) => contains(candidate, element))) return candidate;
  }
  return null;
}

function findDescriptionElement(
  $: CheerioAPI,
  page: PageIndex,
  sections: readonly { element: DomElement }[],
): DomElement | null {
  const headings = sections.map((section) => section.element);
  // The tightest element holding the sections: a classed description container, or else the
  // sections' common ancestor (a page-wide wrapper with a "posting" class must not win).
  const candidates = page.elements.filter(
    (element) =>
      (DESCRIPTION_CLASS.test(element.attribs.class ?? '') ||
        /description/i.test(element.attribs.id ?? '') ||
        element.attribs.id === 'content' ||
        /description/i.test(element.attribs['data-ui'] ?? '')) &&
      headings.filter((heading) => contains(element, heading)).length >= 2,
  );
  const ancestor = commonAncestor(headings);
  if (ancestor !== null) candidates.push(ancestor);
  candidates.sort((a, b) => textContent(a).length - textContent(b).length);
  return candidates[0] ?? null;
}

const REMOVED_FROM_DESCRIPTION = new Set([
  'h1',
  'form',
  'button',
  'nav',
  'aside',
  'footer',
  'script',
  'style',
]);
const REMOVED_CLASS = /apply|share|breadcrumb|posting-categories|job-meta|similar/i;

/** The description's HTML without the page furniture a posting container often holds. */
function descriptionHtml($: CheerioAPI, element: DomElement, title: string): string {
  const clone = $(element).clone();
  const removed = clone
    .find('*')
    .toArray()
    .filter((node) => {
      if (REMOVED_FROM_DESCRIPTION.has(node.name) || REMOVED_CLASS.test(node.attribs.class ?? ''))
        return true;
      if (node.name !== 'h2' && node.name !== 'h3' && node.name !== 'a') return false;
      // The title repeated as a heading, and "Apply for this job" links.
      const text = textOf($, node);
      return text === title || (node.name === 'a' && APPLY.test(text) && text.length <= 40);
    });
  $(removed).remove();
  return clone.html() ?? '';
}

interface LabelledValues {
  location: string | null;
  /** "Remote", "Hybrid", "On-site" given apart from the location. */
  workplace: string | null;
  employmentType: string | null;
  salary: string | null;
  datePosted: string | null;
  company: string | null;
}

const LABELS: readonly [keyof LabelledValues, RegExp][] = [
  [
    'location',
    /^(?:job\s+)?locations?|^office|^standort|^arbeitsort|^lieu|^where|^locatie|^ubicación/i,
  ],
  ['workplace', /^(?:workplace|work\s+model|remote|arbeitsmodell)/i],
  [
    'employmentType',
    /^(?:employment|job|contract|work|position)\s+type|^type|^commitment|^schedule|^hours|^anstellungsart|^vertragsart|^arbeitszeit|^type\s+de\s+contrat/i,
  ],
  [
    'salary',
    /^(?:salary|compensation|pay|pay\s+range|base\s+pay|base\s+salary|gehalt|rémunération|salaire)/i,
  ],
  ['datePosted', /^(?:date\s+)?posted(?:\s+on)?|^posting\s+date|^published|^date|^veröffentlicht/i],
  ['company', /^(?:company|employer|organi[sz]ation|hiring\s+company|unternehmen)/i],
];

const CLASS_HINTS: readonly [keyof LabelledValues, RegExp][] = [
  ['location', /location|job-?loc/i],
  ['employmentType', /commitment|employment-?type|job-?type|contract-?type|time-?type|job_type/i],
  ['workplace', /workplace|remote-?type|work-?model/i],
  ['salary', /salary|compensation|pay-?range/i],
  ['datePosted', /date-?posted|posted-?(?:on|date)|job-?date|posting-?date/i],
  ['company', /company-?name|employer-?name|hiring-?org/i],
];

const BLOCK_CHILD_TAGS = new Set(['li', 'p', 'div', 'ul', 'ol', 'table']);

function nextElementSibling(element: DomElement): DomElement | null {
  for (
    let node = (element as Node).nextSibling;
    node !== null && node !== undefined;
    node = (node as Node).nextSibling
  ) {
    if ((node as Node).type === 'tag') return node as DomElement;
  }
  return null;
}

/**
 * Short metadata: "Location: Berlin" lines, dt/dd and th/td pairs, and classed elements, first
 * found first (page furniture before the description usually holds them).
 */
function readLabelledValues($: CheerioAPI, page: PageIndex): LabelledValues {
  const values: LabelledValues = {
    location: null,
    workplace: null,
    employmentType: null,
    salary: null,
    datePosted: null,
    company: null,
  };
  const set = (key: keyof LabelledValues, value: string): void => {
    const text = normaliseWhitespace(value).replace(/^[:\-–—\s]+/, '');
    if (text !== '' && text.length <= 120) values[key] ??= text;
  };
  const candidates = page.elements.filter((element) => isInMainContent(page, element));

  for (const element of candidates) {
    if (element.name !== 'dt' && element.name !== 'th') continue;
    const label = textOf($, element).replace(/:$/, '');
    const value = nextElementSibling(element);
    if (value === null || (value.name !== 'dd' && value.name !== 'td') || label.length > 30)
      continue;
    for (const [key, pattern] of LABELS) if (pattern.test(label)) set(key, $(value).text());
  }
  for (const element of candidates) {
    const name = element.name;
    if (name !== 'li' && name !== 'p' && name !== 'div' && name !== 'span' && name !== 'dd')
      continue;
    const children = childElements(element);
    if (children.some((child) => BLOCK_CHILD_TAGS.has(child.name))) continue;
    const text = textOf($, element);
    if (text === '' || text.length > 300) continue;
    // "Location: Remote<br>Hours: Part-time" holds one label per line.
    const lines = children.some((child) => child.name === 'br')
      ? (htmlToText($(element).html() ?? '') ?? '').split('\n')
      : [text];
    let isLabelled = false;
    for (const line of lines) {
      const colon = /^([^:]{2,30}):\s*(.+)$/.exec(line);
      if (colon === null) continue;
      isLabelled = true;
      for (const [key, pattern] of LABELS)
        if (pattern.test(colon[1] ?? '')) set(key, colon[2] ?? '');
    }
    if (isLabelled || text.length > 120) continue;
    const hints = hintsOf(element);
    for (const [key, pattern] of CLASS_HINTS) if (pattern.test(hints)) set(key, text);
  }
  return values;
}

function readDomIsRemote(
  location: ParsedLocation | null,
  workplace: string | null,
  hasPlace: boolean,
): boolean | null {
  const workplaceRemote = workplace === null ? null : parseLocationText(workplace).isRemote;
  if (workplaceRemote === true || location?.isRemote === true) return true;
  if (workplaceRemote === false || location?.isRemote === false) return false;
  return hasPlace ? false : null;
}

function readDomSalary(labelledText: string | null, descriptionText: string | null): Salary | null {
  const labelled = labelledText === null ? null : parseSalaryText(labelledText);
  return labelled ?? findSalaryInText(descriptionText);
}

function readDomDate(page: PageIndex, labelled: string | null): string | null {
  if (labelled !== null) {
    const date = normaliseDate(labelled.replace(/^(?:posted|published)\s+(?:on\s+)?/i, ''));
    if (date !== null) return date;
  }
  for (const element of page.elements) {
    if (element.name !== 'time' || element.attribs.datetime === undefined) continue;
    if (!isInMainContent(page, element)) continue;
    const date = normaliseDate(element.attribs.datetime ?? '');
    if (date !== null) return date;
  }
  return null;
}

function readDomEmploymentType(text: string | null): string | null {
  return text === null ? null : normaliseEmploymentType(text, true);
}

export interface DomPostingVeto {
  /** JSON-LD types on the page (local names). */
  jsonLdTypes: ReadonlySet<string>;
}

/** JSON-LD saying the page is something other than a posting. */
// prettier-ignore
const OTHER_PAGE_TYPES = new Set([
  'Article', 'BlogPosting', 'NewsArticle', 'ItemList', 'SearchResultsPage', 'CollectionPage',
  'ProfilePage', 'Product', 'Event', 'Recipe', 'Course', 'FAQPage', 'QAPage', 'Blog',
]);

const POSTING_WORDS =
  /responsibilit|requirement|qualification|duties|what you|who you are|you have|the role|your role|job description|how to apply|aufgaben|profil|must[\s-]have/i;

/** A cheap look at the raw HTML before any DOM is built for the heuristics. */
export function mayBeDomPosting(html: string, meta: PageMeta): boolean {
  return (
    html.length <= MAX_DOM_POSTING_CHARS &&
    (meta.h1.length > 0 || meta.ogTitle !== null) &&
    APPLY.test(html) &&
    POSTING_WORDS.test(html)
  );
}

/**
 * Pages larger than this skip the heuristics (structured data is still read): parsing and
 * walking a DOM that size costs seconds, and no posting page is that large.
 */
export const MAX_DOM_POSTING_CHARS = 2_000_000;

export function findDomPosting(
  $: CheerioAPI,
  meta: PageMeta,
  veto: DomPostingVeto,
): ExtractedPosting | null {
  if ([...veto.jsonLdTypes].some((type) => OTHER_PAGE_TYPES.has(type))) return null;
  if (meta.ogType === 'article') return null;
  const page = indexPage($);
  if (looksLikeBlogPost(page)) return null;

  const title = findTitle($, page, meta);
  if (title === null || title.length > 150 || GONE.test(title) || GONE.test(meta.title ?? ''))
    return null;
  const sections = findSections($, page);
  if (sections.length < 2 || !sections.some((section) => section.kind === 'core')) return null;
  if (!hasApplyAction($, page) || countJobLinks($, page) >= 3) return null;

  const container = findDescriptionElement($, page, sections);
  if (container === null) return null;
  const description = readDescription(descriptionHtml($, container, title));
  if (description.text === null || description.text.length < MIN_DESCRIPTION_CHARS) return null;

  const labelled = readLabelledValues($, page);
  const location = labelled.location === null ? null : parseLocationText(labelled.location);
  const salary = readDomSalary(labelled.salary, description.text);
  const company =
    labelled.company?.replace(/^(?:at|by|@)\s+/i, '') ??
    (meta.ogSiteName === null ? null : cleanSiteName(meta.ogSiteName)) ??
    companyFromPageTitle(meta.title ?? meta.ogTitle, title);
  const locationParts =
    location === null
      ? []
      : [location.city, location.region, location.country].filter((part) => part !== null);
  return {
    title,
    company: company === '' ? null : company,
    location: locationParts.length > 0 ? locationParts.join(', ') : null,
    locationCity: location?.city ?? null,
    locationRegion: location?.region ?? null,
    locationCountry: location?.country ?? null,
    isRemote: readDomIsRemote(location, labelled.workplace, locationParts.length > 0),
    employmentType: readDomEmploymentType(labelled.employmentType),
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency ?? null,
    salaryPeriod: salary?.period ?? null,
    datePosted: readDomDate(page, labelled.datePosted),
    description: description.html,
    descriptionText: description.text,
    requirements: requirementsFromBlocks(description.blocks),
  };
}
