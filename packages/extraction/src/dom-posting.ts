/**
 * A posting without any structured data, read from the page's markup — only when the page
 * clearly is one posting. Career pages come in every shape (a 2008 table layout with `<font>`
 * tags, a WordPress job plugin, a server-rendered React page with hashed class names, a
 * government vacancy notice), so the reader looks for what they share rather than for a template:
 *
 * - a title: an element named for it (`class="job-title"`, `data-testid="posting-headline"`), a
 *   "Job title:" label, the first `<h1>` of the main content that is not the site's name or a
 *   generic heading ("Careers", "Job details"), else og:title or `<title>` cleaned of the site
 *   name. An SVG icon's `<title>` is never a title (page-index.ts skips SVG);
 * - a way to apply: a link, button or form saying "apply", or text saying how ("send your CV to",
 *   "How to apply", "Jetzt bewerben", "postuler");
 * - evidence that the page is one posting, any of: two posting sections among its headings
 *   ("Responsibilities", "What you'll do", "Requirements" …) one of them about the work or the
 *   candidate; one such section ("About the job") with an apply control or a labelled fact; two
 *   labelled facts (page-labels.ts: location, employment type, salary, closing date, reference,
 *   job title) of which one names the job's place or kind;
 * - a description of some substance: the element holding the sections, or the main content.
 *
 * and none of: structured data saying the page is something else (checked by the caller), a blog
 * byline, three or more links to other postings (or three different labelled titles or
 * locations) in the main content, a title saying the posting is gone ("no longer available").
 *
 * Every field found here has provenance `dom`.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { NO_DESCRIPTION, readDescription } from './description.js';
import { childElements, type DomElement } from './dom.js';
import { normaliseDate } from './dates.js';
import { findEmploymentType, normaliseEmploymentType } from './employment-type.js';
import { normaliseWhitespace } from './html-text.js';
import { parseLocationText, type ParsedLocation } from './location.js';
import {
  contains,
  hintsOf,
  indexPage,
  isInMainContent,
  isOutsideFurniture,
  nextElementSibling,
  parentElement,
  shortTextOf,
  SITE_NAME_HINT,
  textContent,
  textOf,
  type PageIndex,
} from './page-index.js';
import { labelKey, readLabelledValues, type LabelledValues } from './page-labels.js';
import { cleanPageTitle, cleanSiteName, companyFromPageTitle, type PageMeta } from './page-meta.js';
import { requirementsFromBlocks } from './requirements.js';
import { findSalaryInText, parseSalaryText, type Salary } from './salary.js';
import type { ExtractedPosting } from './types.js';

/** Section headings of a posting, by what they are about. */
const SECTION_PATTERNS: readonly [kind: 'core' | 'other', pattern: RegExp][] = [
  [
    'core',
    /^(?:(?:key|main|your|the)\s+)?(?:responsibilities|duties|tasks)\b|^what\s+you(?:'ll|\s+will)\s+(?:do|be\s+doing|work\s+on)\b|^(?:about\s+(?:the|this)\s+(?:role|job|position|vacancy)|the\s+role|your\s+role|role\s+overview|the\s+opportunity|job\s+(?:description|summary|purpose)|position\s+(?:summary|description)|duties\s+and\s+responsibilities|your\s+mission|in\s+this\s+role)\b/,
  ],
  [
    'core',
    /^(?:(?:minimum|basic|preferred|required|key|essential|desirable)\s+)?(?:requirements|qualifications|skills|criteria)\b|^(?:essential|desirable)\b|^person\s+specification\b|^what\s+(?:you(?:'ll|\s+will)?\s+(?:need|bring|have)|we(?:'re|\s+are)\s+looking\s+for|we\s+look\s+for)\b|^(?:who\s+you\s+are|about\s+you|your\s+profile|you\s+have|you\s+bring|must[\s-]haves?|skills\s+(?:and|&)\s+experience|the\s+ideal\s+candidate)\b/,
  ],
  [
    'core',
    /^(?:(?:ihre|deine)\s+aufgaben|aufgaben|(?:ihr|dein)\s+profil|anforderungen|stellenbeschreibung|vos\s+missions|missions|(?:votre\s+)?profil(?:\s+recherché)?|description\s+du\s+poste|le\s+poste|wat\s+ga\s+je\s+doen|wat\s+vragen\s+wij|jouw\s+profiel|responsabilidades|requisitos)(?![\p{L}\p{N}])/u,
  ],
  [
    'other',
    /^(?:nice[\s-]to[\s-]haves?|bonus\s+points|benefits|perks|what\s+we\s+offer|why\s+join\s+us|why\s+you'll\s+love|compensation|salary|how\s+to\s+apply|wir\s+bieten|was\s+wir\s+bieten|unser\s+angebot|avantages|ce\s+que\s+nous\s+offrons)\b/,
  ],
];

const GONE =
  /\b(?:page\s+not\s+found|not\s+found|404|no\s+longer\s+(?:available|accepting|open|active)|(?:position|job|vacancy|role)\s+(?:has\s+been|is)\s+(?:filled|closed)|has\s+expired|job\s+expired|does\s+not\s+exist|nicht\s+gefunden|introuvable)\b/i;
const APPLY = /\b(?:apply|bewerben|jetzt\s+bewerben|postuler|candidater)\b/i;
/** Text telling how to apply, on pages whose way to apply is an email address. */
const APPLY_TEXT =
  /\b(?:how\s+to\s+apply|to\s+apply|apply\s+(?:now|online|today|here|by|via|before|for|through|with|in\s+person|at|to)|applications?\s+(?:should|must|to|close|are\s+welcome|by|form|pack)|submit\s+(?:your|an)\s+application|bewerben\s+sie\s+sich|bewerbung|postuler|candidatures?|candidater)\b|\b(?:send|email|e-mail|submit|forward|post)\b[^.]{0,60}\b(?:cv|c\.v\.|résumé|resume|application|cover\s+letter|lebenslauf|candidature)\b/i;
const JOB_LINK =
  /\/(?:jobs?|careers?|positions?|vacanc(?:y|ies)|openings?|stellen(?:angebote)?|postings?|o)\/[^/?#]+|[?&](?:gh_jid|jobid|job_id|jid|vacancyid|vacancy_id)=|\/(?:job|vacancy|posting)[-_]?(?:detail|view)s?\b/i;
const MIN_DESCRIPTION_CHARS = 200;
/**
 * A description longer than this is a page of many things, not one posting's text; checked
 * before the container is cloned and sanitised, which on a large page costs seconds.
 */
const MAX_DESCRIPTION_CHARS = 60_000;
const MAX_TITLE_CHARS = 150;

/** Headings that name the page kind, not the job. */
const GENERIC_TITLE =
  /^(?:careers?|jobs?|job\s+(?:details|description|offer|opening|posting|search|board|vacancy)|about\s+the\s+(?:job|role|position)|(?:current\s+|latest\s+)?(?:vacancies|openings|opportunities|job\s+openings)|vacancy(?:\s+details)?|open\s+(?:positions|roles)|join\s+(?:us|our\s+team|the\s+team)|work\s+with\s+us|we(?:'re|\s+are)\s+hiring|apply(?:\s+now)?|stellenangebote?|stellenanzeige|karriere|offres?\s+d'emploi|offre\s+d'emploi|emplois?|recrutement|home|welcome|menu|search|careers?\s+at\s+.+|jobs?\s+at\s+.+)$/i;

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

/** A heading introducing a whole posting's text: "About the job", "Job description". */
const ABOUT_THE_JOB =
  /^(?:about\s+(?:the|this)\s+(?:job|role|position|vacancy)|job\s+description|the\s+role|role\s+overview|position\s+(?:summary|description)|stellenbeschreibung|description\s+du\s+poste|le\s+poste)$/;

function isAboutTheJob(element: DomElement): boolean {
  return ABOUT_THE_JOB.test(headingKey(shortTextOf(element, 80) ?? ''));
}

const DESCRIPTION_CLASS =
  /description|job-?details|posting-page|job-body|job-content|entry-content|job_description|vacancy-?(?:text|body|details)/i;
const SECTION_CANDIDATE_TAGS = new Set(['h2', 'h3', 'h4', 'h5', 'h6', 'strong', 'b', 'dt']);

function isSectionCandidate(element: DomElement): boolean {
  if (SECTION_CANDIDATE_TAGS.has(element.name)) return true;
  // A paragraph is a heading only when it is short and nothing but that label.
  if (element.name === 'p') return childElements(element).length <= 1;
  return /section-title|heading/i.test(element.attribs.class ?? '');
}

type Section = { element: DomElement; kind: 'core' | 'other' };

/** Heading-like elements naming posting sections, in document order. */
function findSections(page: PageIndex): Section[] {
  const sections: Section[] = [];
  for (const element of page.elements) {
    if (!isSectionCandidate(element)) continue;
    const text = shortTextOf(element, 80);
    if (text === null || text === '') continue;
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

// ---------------------------------------------------------------------------------------------
// Title and company

interface TitleFinding {
  text: string;
  element: DomElement | null;
  /** How sure the title is of being the job's: named or labelled as such, a heading, page meta. */
  source: 'named' | 'label' | 'heading' | 'meta';
}

const TITLE_HINT =
  /(?:^|[\s_-])(?:job|position|posting|vacancy|opening|role)[-_]?(?:title|name|headline|header|heading)\b|\bjobtitle\b|\bapp-title\b|\bjobpostingheader\b|\btitle[-_]of[-_]job\b/i;
const HEADING_TAGS = new Set(['h1', 'h2', 'h3', 'h4']);

/**
 * What a title must not be: the site's own names, and (with a site template) text that is the
 * same on every page of the site, such as a board's "Job Overview" heading.
 */
interface TitleVeto {
  siteNames: readonly string[];
  isTemplateText: (text: string) => boolean;
}

function isUsableTitle(text: string | null, veto: TitleVeto): text is string {
  if (text === null || text.length < 2 || text.length > MAX_TITLE_CHARS) return false;
  if (veto.isTemplateText(text)) return false;
  // "Don't see your role here?": a question heads an invitation, never names a job.
  if (text.endsWith('?')) return false;
  if (GENERIC_TITLE.test(text.replace(/[\s:.!]+$/, '')) || sectionKind(text) !== null) return false;
  if (labelKey(text) !== null) return false;
  const lower = text.toLowerCase();
  return !veto.siteNames.some((name) => name.toLowerCase() === lower);
}

/** An element named for the title, or its heading when the named element wraps more. */
function namedTitle(page: PageIndex, veto: TitleVeto): TitleFinding | null {
  for (const element of page.elements) {
    if (!TITLE_HINT.test(hintsOf(element)) || !isOutsideFurniture(page, element)) continue;
    if (FORM_TAGS.has(element.name)) continue;
    const heading = HEADING_TAGS.has(element.name) ? element : headingWithin(element);
    if (heading === null) continue;
    const text = headingText(heading);
    if (isUsableTitle(text, veto)) return { text, element: heading, source: 'named' };
  }
  return null;
}

function headingTitle(
  page: PageIndex,
  sections: readonly Section[],
  veto: TitleVeto,
): TitleFinding | null {
  // Several <h1>s are common: the logo, "Careers", the job. The job's is the first of the main
  // content that is neither the site's name nor a generic heading.
  let firstH1: DomElement | null = null;
  for (const element of page.elements) {
    if (!isTopHeading(element) || !isInMainContent(page, element)) continue;
    if (SITE_NAME_HINT.test(hintsOf(element))) continue;
    firstH1 ??= element;
    const text = headingText(element);
    if (isUsableTitle(text, veto)) return { text, element, source: 'heading' };
  }
  // "Vacancies" as the <h1> and the job as the next heading, before any posting section.
  const firstSection = sections[0]?.element;
  let isAfterH1 = firstH1 === null;
  for (const element of page.elements) {
    if (element === firstH1) isAfterH1 = true;
    if (element === firstSection) break;
    if (!isAfterH1 || (element.name !== 'h2' && element.name !== 'h3')) continue;
    if (!isInMainContent(page, element)) continue;
    const text = shortTextOf(element, 100);
    if (isUsableTitle(text, veto)) return { text, element, source: 'heading' };
    break;
  }
  return null;
}

/** An `<h1>`, or an element marked up as one (`role="heading" aria-level="1"`). */
function isTopHeading(element: DomElement): boolean {
  return (
    element.name === 'h1' ||
    (element.attribs.role === 'heading' && element.attribs['aria-level'] === '1')
  );
}

/** A heading's text without its `<small>` subtitle ("Maintenance Electrician <small>Nights"). */
function headingText(element: DomElement): string | null {
  const small = childElements(element).find((child) => child.name === 'small');
  const text = shortTextOf(element, MAX_TITLE_CHARS + 80);
  if (text === null || small === undefined)
    return text !== null && text.length <= MAX_TITLE_CHARS ? text : null;
  const subtitle = shortTextOf(small, 80) ?? '';
  const main = text.endsWith(subtitle) ? text.slice(0, text.length - subtitle.length).trim() : text;
  return main.length <= MAX_TITLE_CHARS ? main : null;
}

/** A wrapper's first heading, the element itself when it holds only inline text, else null. */
function headingWithin(element: DomElement): DomElement | null {
  const stack = childElements(element).reverse();
  let hasBlock = false;
  for (let steps = 0; stack.length > 0 && steps < 200; steps++) {
    const child = stack.pop() as DomElement;
    if (HEADING_TAGS.has(child.name)) return child;
    if (BLOCK_TAGS.has(child.name)) hasBlock = true;
    stack.push(...childElements(child).reverse());
  }
  return hasBlock ? null : element;
}

const BLOCK_TAGS = new Set(['div', 'p', 'ul', 'ol', 'li', 'table', 'section', 'dl']);

function findTitle(
  page: PageIndex,
  meta: PageMeta,
  labelled: LabelledValues,
  sections: readonly Section[],
  veto: TitleVeto,
): TitleFinding | null {
  const named = namedTitle(page, veto);
  if (named !== null) return named;
  const label = labelled.title;
  if (isUsableTitle(label, veto) && normaliseEmploymentType(label, true) === null)
    return { text: label, element: null, source: 'label' };
  const heading = headingTitle(page, sections, veto);
  if (heading !== null) return heading;
  const roleTitle = labelled.roleTitle;
  if (isUsableTitle(roleTitle, veto) && normaliseEmploymentType(roleTitle, true) === null)
    return { text: roleTitle, element: null, source: 'heading' };
  for (const raw of [meta.ogTitle, meta.title]) {
    const text = raw === null ? null : cleanPageTitle(raw, veto.siteNames[0] ?? null);
    if (isUsableTitle(text, veto)) return { text, element: null, source: 'meta' };
  }
  return null;
}

/** The site's own name: og:site_name, or the alt text of its logo ("Acme logo"). */
function findSiteNames(page: PageIndex, meta: PageMeta): string[] {
  const names: string[] = [];
  const siteName = meta.ogSiteName === null ? null : cleanSiteName(meta.ogSiteName);
  if (siteName !== null) names.push(siteName);
  for (const element of page.elements) {
    if (element.name !== 'img') continue;
    const attributes = element.attribs;
    const alt = normaliseWhitespace(attributes.alt ?? '');
    const isLogo = /logo/i.test(
      `${attributes.class ?? ''} ${attributes.id ?? ''} ${attributes.src ?? ''} ${alt}`,
    );
    if (!isLogo || alt === '') continue;
    const name = cleanSiteName(alt.replace(/[\s-]*\b(?:logo|home(?:page)?|homepage)\b\s*$/i, ''));
    if (name !== null && name.length <= 60 && !/^(?:logo|home)$/i.test(name)) names.push(name);
    break;
  }
  // A site title or logo written as text: <h1 id="logo">, <p class="site-title">, .navbar-brand.
  for (const element of page.elements) {
    if (!SITE_NAME_HINT.test(hintsOf(element)) || element.name === 'img') continue;
    const text = shortTextOf(element, 60);
    const name = text === null ? null : cleanSiteName(text);
    if (name !== null && name.length >= 2 && !/^(?:logo|home|menu)$/i.test(name)) {
      names.push(name);
      break;
    }
  }
  return names;
}

/** "at Acme", "bei Acme GmbH", "chez Acme" right under the title. */
function companyBesideTitle(title: TitleFinding): string | null {
  if (title.element === null) return null;
  let next = nextElementSibling(title.element);
  const parent = parentElement(title.element);
  if (next === null && parent !== null && childElements(parent).length === 1)
    next = nextElementSibling(parent);
  const text = next === null ? null : shortTextOf(next, 80);
  const match = text === null ? null : /^(?:at|@|bei|chez)\s+(\S.{0,60})$/i.exec(text);
  return match?.[1]?.trim() ?? null;
}

/** A job board's link to the employer's page: `<a href="/company/harrow-finch/">Harrow & Finch</a>`. */
function companyPageLink(page: PageIndex): string | null {
  for (const element of page.elements) {
    if (
      element.name !== 'a' ||
      !/\/(?:company|companies|employers?|unternehmen)\/[^/?#]/i.test(element.attribs.href ?? '')
    )
      continue;
    if (!isInMainContent(page, element)) continue;
    const text = shortTextOf(element, 60);
    if (
      text !== null &&
      text.length >= 2 &&
      !/\b(?:see|view|more|all|jobs?|about|follow)\b/i.test(text)
    )
      return text;
  }
  return null;
}

function findCompany(
  page: PageIndex,
  labelled: LabelledValues,
  title: TitleFinding,
  meta: PageMeta,
  siteNames: readonly string[],
): string | null {
  const labelledCompany = labelled.company?.replace(/^(?:at|by|@)\s+/i, '').trim();
  if (labelledCompany !== undefined && labelledCompany !== '') return labelledCompany;
  return (
    companyBesideTitle(title) ??
    companyPageLink(page) ??
    siteNames[0] ??
    companyFromPageTitle(meta.title, title.text) ??
    companyFromPageTitle(meta.ogTitle, title.text)
  );
}

// ---------------------------------------------------------------------------------------------
// Evidence

const FORM_TAGS = new Set(['select', 'option', 'input', 'textarea', 'button', 'form', 'label']);

function hasApplyAction(page: PageIndex): boolean {
  for (const element of page.elements) {
    const name = element.name;
    const attributes = element.attribs;
    const isInput =
      name === 'input' && (attributes.type === 'submit' || attributes.type === 'button');
    if (name !== 'a' && name !== 'button' && name !== 'form' && !isInput) continue;
    if (!isOutsideFurniture(page, element)) continue;
    const label = name === 'form' ? '' : (attributes.value ?? shortTextOf(element, 80) ?? '');
    if (APPLY.test(label)) return true;
    if (
      /apply|application|bewerb|candidat/i.test(
        `${attributes.href ?? ''} ${attributes.id ?? ''} ${attributes.class ?? ''} ${attributes.action ?? ''}`,
      )
    )
      return true;
  }
  return false;
}

/** Byline, "min read", comments, "Filed under": two of these make a blog post or an article. */
function looksLikeBlogPost(page: PageIndex): boolean {
  let hasAuthor = false;
  let hasDate = false;
  let articleSigns = 0;
  for (const element of page.elements) {
    const className = element.attribs.class ?? '';
    if (
      element.attribs.rel === 'author' ||
      /\b(?:byline|post-author|entry-author|article-author)\b|author-name/i.test(className)
    )
      hasAuthor = true;
    if (
      (element.name === 'time' && element.attribs.pubdate !== undefined) ||
      /\b(?:post-date|entry-date|published)\b|post-meta|article-date/i.test(className)
    )
      hasDate = true;
    if (
      /\b(?:comments?-?(?:area|section|list)|comment-respond|share-?(?:this|post|article))\b/i.test(
        `${className} ${element.attribs.id ?? ''}`,
      )
    )
      articleSigns++;
    if (element.name === 'p' || element.name === 'span' || element.name === 'div') {
      const text = shortTextOf(element, 60);
      if (
        text !== null &&
        /^(?:by\s+\p{Lu}[\p{L}.'-]+(?:\s+\p{Lu}[\p{L}.'-]+)*(?:\s*[|·,•].*)?|\d+\s+min(?:ute)?s?\s+read|(?:filed|posted)\s+(?:under|in)\s+.+|leave\s+a\s+(?:reply|comment)|\d+\s+comments?)$/iu.test(
          text,
        )
      )
        articleSigns++;
    }
  }
  return (hasAuthor && hasDate) || articleSigns >= 2;
}

function countJobLinks(page: PageIndex): number {
  const targets = new Set<string>();
  for (const element of page.elements) {
    const href = element.name === 'a' ? element.attribs.href : undefined;
    if (href === undefined || !JOB_LINK.test(href) || /apply/i.test(href)) continue;
    const text = shortTextOf(element, 150) ?? '';
    if (APPLY.test(text) || !isInMainContent(page, element)) continue;
    targets.add(href.replace(/#.*$/, ''));
  }
  return targets.size;
}

/**
 * Signs that only a job has: a section about the work or the candidate ("Responsibilities",
 * "Your profile"; a bare "Requirements" heads rental and course pages too), an employment type,
 * a salary, a reference number, a title named or labelled as a job's (or a "Position" beside a
 * "Company"). A location, a date, a
 * deadline or "Requirements" alone are on events, flats, grants and courses as well.
 */
function countJobSignals(
  labelled: LabelledValues,
  title: TitleFinding,
  sections: readonly Section[],
): number {
  let count = 0;
  if (sections.some((section) => section.kind === 'core' && !isGenericSection(section.element)))
    count++;
  if (readDomEmploymentType(labelled.employmentType) !== null) count++;
  if (labelled.salary !== null && parseSalaryText(labelled.salary) !== null) count++;
  if (labelled.reference !== null) count++;
  if (title.source === 'named' || title.source === 'label') count++;
  // "Position:" beside "Company:": the position is a job's, not a person's.
  else if (labelled.roleTitle !== null && labelled.company !== null) count++;
  return count;
}

const GENERIC_SECTION = /^(?:requirements|skills|criteria|entry\s+requirements)$/;

function isGenericSection(element: DomElement): boolean {
  return GENERIC_SECTION.test(headingKey(shortTextOf(element, 80) ?? ''));
}

// ---------------------------------------------------------------------------------------------
// Description

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

const MAIN_TAGS = new Set(['main', 'article']);

function findDescriptionElement(
  page: PageIndex,
  sections: readonly Section[],
  title: TitleFinding,
): DomElement | null {
  const headings = sections.map((section) => section.element);
  if (headings.length >= 2) {
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
    const lengths = new Map(candidates.map((element) => [element, textContent(element).length]));
    candidates.sort((a, b) => (lengths.get(a) ?? 0) - (lengths.get(b) ?? 0));
    return candidates[0] ?? null;
  }
  // One section or none: a classed description, the main content, or the nearest ancestor of
  // the section heading (else the title) with enough text.
  const classed = page.elements.find(
    (element) =>
      isInMainContent(page, element) &&
      (DESCRIPTION_CLASS.test(element.attribs.class ?? '') ||
        /description/i.test(element.attribs.id ?? '')) &&
      normaliseWhitespace(textContent(element)).length >= MIN_DESCRIPTION_CHARS,
  );
  if (classed !== undefined) return classed;
  const start = headings[0] ?? title.element;
  if (start !== null) {
    for (let element = parentElement(start); element !== null; element = parentElement(element)) {
      if (normaliseWhitespace(textContent(element)).length >= MIN_DESCRIPTION_CHARS) return element;
    }
  }
  return (
    page.elements.find(
      (element) =>
        (MAIN_TAGS.has(element.name) ||
          element.attribs.role === 'main' ||
          /^(?:content|main|main-content)$/i.test(element.attribs.id ?? '')) &&
        isOutsideFurniture(page, element),
    ) ??
    page.elements.find((element) => element.name === 'body') ??
    null
  );
}

const REMOVED_FROM_DESCRIPTION = new Set([
  'h1',
  'form',
  'button',
  'nav',
  'aside',
  'footer',
  'header',
  'script',
  'style',
  'svg',
  'noscript',
]);
const REMOVED_CLASS =
  /apply|share|breadcrumb|posting-categories|job-meta|similar|cookie|consent|related|\bnav/i;

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
      const text = textOf(node);
      return text === title || (node.name === 'a' && APPLY.test(text) && text.length <= 40);
    });
  $(removed).remove();
  return clone.html() ?? '';
}

// ---------------------------------------------------------------------------------------------
// Fields

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

/** The labelled pay, else pay in the description; a bare `$` is read by the job's country. */
function readDomSalary(
  labelledText: string | null,
  descriptionText: string | null,
  country: string | null,
): Salary | null {
  const labelled = labelledText === null ? null : parseSalaryText(labelledText, null, country);
  return labelled ?? findSalaryInText(descriptionText, country);
}

function readDomDate(page: PageIndex, labelled: string | null): string | null {
  if (labelled !== null) {
    const date = normaliseDate(
      labelled.replace(/^(?:posted|published|veröffentlicht|publié)\s+(?:on\s+|am\s+|le\s+)?/i, ''),
    );
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
  return text === null ? null : findEmploymentType(text);
}

export interface DomPostingVeto {
  /** JSON-LD types on the page (local names). */
  jsonLdTypes: ReadonlySet<string>;
  /**
   * Text that is the site's template, not a record (see template/): never the title. Default:
   * nothing is.
   */
  isTemplateText?: (text: string) => boolean;
  /**
   * The page is known to be one posting (it fits the site's template and its title slot holds a
   * value): the evidence the reader would otherwise ask for is not needed, and a short or
   * missing description does not make the page something else.
   */
  isKnownPosting?: boolean;
  /** The page's index when the caller built one already (the template reader does). */
  pageIndex?: PageIndex;
}

/** JSON-LD saying the page is something other than a posting. */
// prettier-ignore
const OTHER_PAGE_TYPES = new Set([
  'Article', 'BlogPosting', 'NewsArticle', 'ItemList', 'SearchResultsPage', 'CollectionPage',
  'ProfilePage', 'Product', 'Event', 'Recipe', 'Course', 'FAQPage', 'QAPage', 'Blog',
]);

const APPLY_WORDS = /apply|bewerb|postul|candidat|send\s+(?:your|a|us)|application/i;
const POSTING_WORDS =
  /responsibilit|requirement|qualification|duties|what you|who you are|you have|the role|your role|job|how to apply|aufgaben|profil|must[\s-]have|location|standort|lieu|employment|salary|vacanc|position|contrat|stelle|poste|emploi|hiring|recruit|career|karriere/i;

/** A cheap look at the raw HTML before any DOM is built for the heuristics. */
export function mayBeDomPosting(html: string): boolean {
  return html.length <= MAX_DOM_POSTING_CHARS && APPLY_WORDS.test(html) && POSTING_WORDS.test(html);
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
  if (GONE.test(meta.title ?? '')) return null;
  const page = veto.pageIndex ?? indexPage($);
  if (looksLikeBlogPost(page)) return null;

  const isKnownPosting = veto.isKnownPosting === true;
  const { values: labelled, isListing } = readLabelledValues(page);
  if (isListing && !isKnownPosting) return null;
  const sections = findSections(page);
  const siteNames = findSiteNames(page, meta);
  const titleVeto: TitleVeto = { siteNames, isTemplateText: veto.isTemplateText ?? (() => false) };
  const found = findTitle(page, meta, labelled, sections, titleVeto);
  if (isKnownPosting) {
    // The caller has the title from the template; the reader's is only a fallback.
    const title = found ?? { text: '', element: null, source: 'meta' };
    return readPosting($, page, { labelled, sections, siteNames, meta, title });
  }
  const title = found;
  if (title === null || GONE.test(title.text)) return null;

  const hasControl = hasApplyAction(page);
  const body = page.elements.find((element) => element.name === 'body') ?? page.elements[0];
  const hasApply =
    hasControl || (body !== undefined && APPLY_TEXT.test(normaliseWhitespace(textContent(body))));
  if (!hasApply || countJobLinks(page) >= 3) return null;
  const core = sections.filter((section) => section.kind === 'core').length;
  const signals = countJobSignals(labelled, title, sections);
  const isPosting =
    (sections.length >= 2 && core >= 1) ||
    signals >= 2 ||
    (signals >= 1 && labelled.location !== null) ||
    (hasControl && sections.some((section) => isAboutTheJob(section.element)));
  if (!isPosting) return null;
  const posting = readPosting($, page, { labelled, sections, siteNames, meta, title });
  const text = posting?.descriptionText ?? null;
  return text === null || text.length < MIN_DESCRIPTION_CHARS ? null : posting;
}

interface PageFindings {
  labelled: LabelledValues;
  sections: readonly Section[];
  siteNames: readonly string[];
  meta: PageMeta;
  title: TitleFinding;
}

/** The record of a page taken to be a posting; null when its description is a page of many things. */
function readPosting(
  $: CheerioAPI,
  page: PageIndex,
  { labelled, sections, siteNames, meta, title }: PageFindings,
): ExtractedPosting | null {
  const container = findDescriptionElement(page, sections, title);
  if (container !== null && textContent(container).length > MAX_DESCRIPTION_CHARS) return null;
  const description =
    container === null
      ? NO_DESCRIPTION
      : readDescription(descriptionHtml($, container, title.text));

  const location = labelled.location === null ? null : parseLocationText(labelled.location);
  const salary = readDomSalary(labelled.salary, description.text, location?.country ?? null);
  const company = findCompany(page, labelled, title, meta, siteNames);
  const locationParts =
    location === null
      ? []
      : [location.city, location.region, location.country].filter((part) => part !== null);
  return {
    title: title.text,
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
