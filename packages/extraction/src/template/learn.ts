/**
 * Learning a site's template from its own pages (issue 37): no rules per site. A career site is
 * hundreds of pages built from one template; text that is the same on most of them at the same
 * place is template (headings like "Job Overview", labels, header, footer), what changes is the
 * record. Fields are assigned to the record's slots across all pages together, each slot scored
 * on what its values look like on every page (see scoreSlot).
 */
import { findDomPosting } from '../dom-posting.js';
import { normaliseDate } from '../dates.js';
import { findEmploymentType } from '../employment-type.js';
import { cleanSiteName, companyFromPageTitle } from '../page-meta.js';
import type { LabelKey } from '../page-labels.js';
import { parseTemplatePage, type TemplatePage } from './page.js';
import { pathOf, valueAt } from './paths.js';
import { alignParsed, MAX_VARIANTS, readAligned, sharesChrome } from './read.js';
import { alignUnits, comparableText, type AlignedUnit } from './slots.js';
import type { SiteTemplate, TemplateField, TemplatePath } from './types.js';
import { prefixOf, splitPrefixes } from './units.js';
import {
  looksLikePlace,
  looksLikePostingTitle,
  looksLikeRole,
  splitParts,
  stripDatePrefix,
} from './values.js';

/** A constant is on at least this share of the pages (and on two). */
const CONSTANT_SHARE = 0.5;
/** A value on this share of the pages at one slot is the site's, not a page's. */
const SITE_VALUE_SHARE = 0.9;
/** Pages whose reader votes are counted: enough to outvote a few odd pages, and cheap. */
const READER_VOTE_PAGES = 6;
/**
 * How much of a site each design's template keeps (constants, template texts): the site's main
 * design, and each design variant beside it, smaller, so that all stay well under 64 KB.
 */
interface Limits {
  constants: number;
  templateTextsChars: number;
}
const MAIN_LIMITS: Limits = { constants: 1500, templateTextsChars: 16_000 };
const VARIANT_LIMITS: Limits = { constants: 300, templateTextsChars: 3000 };
/**
 * Each design beside the main one (up to MAX_VARIANTS) is learned from this many pages the others
 * do not fit.
 */
const MIN_VARIANT_PAGES = 3;
const MAX_RECORD_KEYS = 300;
const MAX_CHROME_CONSTANTS = 300;
const MAX_PREFIX_LABELS = 60;

const LABEL_FIELDS: Partial<Record<LabelKey, TemplateField>> = {
  title: 'title',
  roleTitle: 'title',
  company: 'company',
  location: 'location',
  datePosted: 'datePosted',
  employmentType: 'employmentType',
};

const HINTS: Partial<Record<TemplateField, RegExp>> = {
  title: /(?<!sub)title|headline/i,
  company: /company|employer|organi[sz]ation|hiring|agency|recruiter/i,
  location: /location|\bcity\b|\bloc\b|standort|\bplace\b|\bregion\b/i,
  datePosted: /date|posted|published/i,
  employmentType: /employment|job-?type|contract|commitment|schedule/i,
};

interface PageData extends TemplatePage {
  aligned: AlignedUnit[];
  reader: { title: string | null; company: string | null; location: string | null } | null;
}

interface Slot {
  /** The slot, with `#part` for one part of a unit's text ("Kaunas - UAB Daltra"). */
  id: string;
  slot: string;
  key: string;
  part: number | null;
  /** Per page index: the unit's index in that page's aligned units. */
  at: Map<number, number>;
  /** Per page index: the slot's text there, and as compared (comparableText). */
  texts: Map<number, string>;
  lowers: Map<number, string>;
}

export function learnSiteTemplate(pages: readonly string[]): SiteTemplate | null {
  // Callers pass stored rows and crawled bodies: anything that is not a page is left out.
  const given: unknown = pages;
  if (!Array.isArray(given)) return null;
  const parsed = (given as unknown[])
    .map((html) => (typeof html === 'string' ? parseTemplatePage(html) : null))
    .filter((page): page is TemplatePage => page !== null);
  const main = learnDesign(parsed, MAIN_LIMITS);
  if (main === null) return null;
  // Pages of another design (an older build of the site, a second page layout): each cluster of
  // them that the designs so far do not fit teaches a variant, read where a page fits it. A page
  // in the main design's chrome but not its record is another kind of page (a listing, a closed
  // posting), never a design of postings.
  const variants: SiteTemplate[] = [];
  const taken = new Set<TemplatePage>();
  let rest = parsed.filter((page) => {
    const aligned = alignParsed(page, main);
    return !readAligned(aligned, main).fits && !sharesChrome(aligned, main);
  });
  while (variants.length < MAX_VARIANTS && rest.length >= MIN_VARIANT_PAGES) {
    const variant = learnDesign(rest, VARIANT_LIMITS);
    if (variant === null || !isPostingDesign(variant)) break;
    const left = rest.filter((page) => !fitsDesign(page, variant));
    if (rest.length - left.length < MIN_VARIANT_PAGES) break;
    variants.push(variant);
    for (const page of rest) if (!left.includes(page)) taken.add(page);
    rest = left;
  }
  if (variants.length === 0) return main;
  // The main design again without the variants' pages: its record and `shape` as its own pages
  // alone give them, so that the shape follows the dominant design whatever else was crawled.
  const own = learnDesign(
    parsed.filter((page) => !taken.has(page)),
    MAIN_LIMITS,
  );
  return { ...(own ?? main), variants };
}

/** Whether a design's template reads postings: a title, naming roles on most of its pages. */
function isPostingDesign(design: SiteTemplate): boolean {
  return design.fields.title !== undefined && (design.titleRoleShare ?? 0) >= 0.75;
}

function fitsDesign(page: TemplatePage, design: SiteTemplate): boolean {
  return readAligned(alignParsed(page, design), design).fits;
}

/** One design's template, learned from its pages (the units as parsed, not yet split). */
function learnDesign(pages: readonly TemplatePage[], limits: Limits): SiteTemplate | null {
  const parsed = pages.map((page) => ({ ...page }));
  const count = parsed.length;
  if (count < 2) return null;
  const prefixLabels = commonPrefixes(parsed, count);
  for (const page of parsed) page.units = splitPrefixes(page.units, prefixLabels);
  const minSupport = Math.max(2, Math.ceil(count * CONSTANT_SHARE));

  // Constants: the same text at the same key on most pages; labels on any two.
  const support = new Map<string, number>();
  const labelIds = new Set<string>();
  for (const page of parsed) {
    const seen = new Set<string>();
    for (const unit of page.units) {
      if (seen.has(unit.id)) continue;
      seen.add(unit.id);
      support.set(unit.id, (support.get(unit.id) ?? 0) + 1);
      if (unit.isLabel) labelIds.add(unit.id);
    }
  }
  // The most widespread first, at most `limits.constants` (a template stays well under 64 KB); the
  // pages are aligned on exactly the set the template keeps, as a page read later will be.
  const constants = new Set<string>(
    [...support]
      .filter(([id, pagesWith]) => pagesWith >= minSupport || (pagesWith >= 2 && labelIds.has(id)))
      .sort((a, b) => b[1] - a[1])
      .slice(0, limits.constants)
      .map(([id]) => id),
  );

  // A frequent value ("London" on 6 pages of 10) is no constant when other pages hold other
  // values in its slot; again after demoting, since that changes the anchors after it.
  let pageData: PageData[] = [];
  for (let round = 0; round < 3; round++) {
    pageData = parsed.map((page) => ({
      ...page,
      aligned: alignUnits(page.units, (id) => constants.has(id)),
      reader: null,
    }));
    const variableSlots = new Set<string>();
    for (const page of pageData)
      for (const item of page.aligned) if (!item.isConstant) variableSlots.add(item.slot);
    let demoted = 0;
    for (const page of pageData) {
      for (const item of page.aligned) {
        if (!item.isConstant || item.unit.isLabel || !variableSlots.has(item.slot)) continue;
        if ((support.get(item.constantId) ?? 0) >= count * SITE_VALUE_SHARE) continue;
        if (constants.delete(item.constantId)) demoted++;
      }
    }
    if (demoted === 0) break;
  }

  const isTemplateText = createTextVeto(pageData);
  for (const [index, page] of pageData.entries()) {
    if (index >= READER_VOTE_PAGES) break;
    page.reader = readerVote(page, isTemplateText);
  }

  const slots = collectSlots(pageData);
  const fields = assignFields(slots, pageData, count);
  const siteValues = findSiteValues(pageData, fields, count);
  if (Object.keys(fields).length === 0 && Object.keys(siteValues).length === 0) return null;
  const region = recordRegion(pageData, slots, fields);
  return {
    format: 1,
    shape: shapeOf(region.constants, pageData, count),
    pages: count,
    constants: [...constants].sort(),
    recordConstants: [...region.constants].sort(),
    chromeConstants: [...constants]
      .filter((id) => !region.constants.has(id) && (support.get(id) ?? 0) >= count * 0.8)
      .sort()
      .slice(0, MAX_CHROME_CONSTANTS),
    recordKeys: [...region.keys].sort().slice(0, MAX_RECORD_KEYS),
    prefixLabels: [...prefixLabels].sort(),
    sharedPageTitles: sharedPageTitles(pageData),
    templateTexts: templateTexts(pageData, limits.templateTextsChars),
    fields,
    titleRoleShare: titleRoleShare(pageData, fields.title),
    siteValues,
  };
}

function titleRoleShare(pages: readonly PageData[], path: TemplatePath | undefined): number {
  if (path === undefined) return 0;
  let titled = 0;
  let roles = 0;
  for (const page of pages) {
    const title = valueAt(page, path);
    if (title === null) continue;
    titled++;
    if (looksLikePostingTitle(title)) roles++;
  }
  return titled === 0 ? 0 : Math.round((roles / titled) * 100) / 100;
}

function createTextVeto(pages: readonly PageData[]): (text: string) => boolean {
  const texts = new Set<string>();
  for (const page of pages)
    for (const item of page.aligned)
      if (item.isConstant && item.unit.text.length <= 150)
        texts.add(comparableText(item.unit.text));
  return (text) => texts.has(comparableText(text));
}

function readerVote(page: PageData, isTemplateText: (text: string) => boolean): PageData['reader'] {
  try {
    const posting = findDomPosting(page.$, page.meta, {
      jsonLdTypes: new Set(),
      isTemplateText,
      isKnownPosting: true,
      pageIndex: page.index,
    });
    if (posting === null) return null;
    return {
      title: posting.title === '' ? null : posting.title,
      company: posting.company,
      location: posting.location,
    };
  } catch {
    // The reader's votes are a help, not a requirement: a page it cannot read gets none.
    return null;
  }
}

function collectSlots(pages: readonly PageData[]): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  const add = (
    id: string,
    item: AlignedUnit,
    part: number | null,
    pageIndex: number,
    unitIndex: number,
    text: string,
  ): void => {
    let slot = slots.get(id);
    if (slot === undefined) {
      slot = {
        id,
        slot: item.slot,
        key: item.unit.key,
        part,
        at: new Map(),
        texts: new Map(),
        lowers: new Map(),
      };
      slots.set(id, slot);
    }
    if (slot.at.has(pageIndex)) return;
    slot.at.set(pageIndex, unitIndex);
    slot.texts.set(pageIndex, text);
    // Unit texts are whitespace-collapsed already.
    slot.lowers.set(pageIndex, text.toLowerCase());
  };
  for (const [pageIndex, page] of pages.entries()) {
    for (const [unitIndex, item] of page.aligned.entries()) {
      if (item.isConstant || item.unit.isLabel) continue;
      add(item.slot, item, null, pageIndex, unitIndex, item.unit.text);
      const parts = splitParts(item.unit.text);
      for (const [part, text] of parts.entries())
        add(`${item.slot}#${part}`, item, part, pageIndex, unitIndex, text);
    }
  }
  return slots;
}

function anchorLabel(page: PageData, unitIndex: number): LabelKey | null {
  const item = page.aligned[unitIndex];
  if (item === undefined) return null;
  if (item.unit.label !== null) return item.unit.label;
  // The label right before the value: "<td>Location:</td><td>Lisbon</td>".
  const previous = page.aligned[unitIndex - 1];
  return previous !== undefined && previous.unit.isLabel ? previous.unit.label : null;
}

const LEGAL_FORM =
  /(?:^|[\s,(])(?:inc|llc|llp|ltd|limited|gmbh|ag|uab|ab|oy|as|a\/s|sa|s\.a|bv|b\.v|nv|plc|corp|corporation|company|co|group|sarl|sas|srl|spa|s\.p\.a|pty|kg|mb|kft|zrt|sp\. z o\.o|ltda|pvt|s\.r\.o|a\.s|spol)\.?(?=$|[\s,)])/i;

/** Words that end names of organisations rather than of jobs or places. */
const ORGANISATION_WORD =
  /\b(?:associates|partners|consulting|consultants|solutions|technologies|technology|systems|labs|studios?|agency|bank|holdings|ventures|capital|university|hospital|council|foundation|institute|trust|media|software|games|health|networks?)$/i;

/** Words in images' names that say nothing about whose logo it is. */
// prettier-ignore
const LOGO_WORDS = new Set([
  'logo', 'image', 'img', 'photo', 'banner', 'header', 'footer', 'company', 'careers', 'icon',
  'png', 'jpg', 'jpeg', 'svg', 'gif', 'webp', 'dark', 'light', 'color', 'colour', 'white',
  'black', 'rgb', 'small', 'large', 'center', 'the', 'and', 'for', 'job', 'jobs', 'team',
]);

/** "27 days ago", "Today", "il y a 1 sem.": when, never what or where. */
const RELATIVE_TIME =
  /^(?:posted\s+|publiée?\s+)?(?:today|yesterday|just\s+now|\d+\+?\s*(?:minutes?|mins?|hours?|hrs?|days?|weeks?|months?)\s+ago|il\s+y\s+a\b.*|hace\s+\d+.*|vor\s+\d+.*|heute|gestern|aujourd'hui|hier)$/i;

interface PageContext {
  /** `<title>` and og:title, lower case. */
  pageTitle: string;
  /** How often each short variable text, or part of one, is on the page (lower case). */
  shortTexts: Map<string, number>;
  /** The words of the page's images' alt texts and file names: an employer's logo. */
  imageWords: Set<string>;
  /** The index of the page's first variable unit outside the chrome that is no label. */
  firstVariable: number;
}

function pageContext(page: PageData): PageContext {
  const shortTexts = new Map<string, number>();
  const count = (text: string): void => {
    shortTexts.set(text, (shortTexts.get(text) ?? 0) + 1);
  };
  for (const item of page.aligned) {
    if (item.isConstant || item.unit.text.length > 300) continue;
    const lower = item.unit.text.toLowerCase();
    count(lower);
    for (const part of splitParts(lower)) count(part);
    // "informacija apie UAB Daltra": a name at the end of a short line.
    const words = lower.split(' ');
    if (words.length > 2 && words.length <= 8)
      for (let start = 1; start < words.length - 1; start++) count(words.slice(start).join(' '));
  }
  const imageWords = new Set<string>();
  for (const element of page.index.elements) {
    if (element.name !== 'img') continue;
    const file = (element.attribs.src ?? '').split(/[?#]/)[0]?.split('/').pop() ?? '';
    const words = `${element.attribs.alt ?? ''} ${file}`.toLowerCase().match(/\p{L}{3,}/gu) ?? [];
    for (const word of words) imageWords.add(word);
  }
  const firstVariable = page.aligned.findIndex(
    (item) => !item.isConstant && !item.unit.isChrome && !item.unit.isLabel,
  );
  return {
    imageWords,
    firstVariable,
    pageTitle: comparableText(
      `${page.meta.title ?? ''} | ${page.meta.ogTitle ?? ''} | ${page.meta.description?.slice(0, 300) ?? ''}`,
    ),
    shortTexts,
  };
}

/** Whether the text is on the page more than once: a name in a heading and in a line. */
function recurs(lower: string, context: PageContext): boolean {
  return (context.shortTexts.get(lower) ?? 0) >= 2;
}

/** "… at Early Learning - Bendigo": the text follows "at" (or "@", "bei", "chez") in the title. */
function isAfterAt(pageTitle: string, lower: string): boolean {
  const index = pageTitle.indexOf(lower);
  return (
    index > 0 && /(?:\bat|@|\bbei|\bchez)\s$/.test(pageTitle.slice(Math.max(0, index - 6), index))
  );
}

/** Whether the unit is the page's first variable heading outside the chrome. */
function isFirstHeading(page: PageData, unitIndex: number): boolean {
  for (let index = 0; index < unitIndex; index++) {
    const item = page.aligned[index] as AlignedUnit;
    if (!item.isConstant && !item.unit.isChrome && item.unit.headingLevel !== null) return false;
  }
  return true;
}

function matchesLoosely(reader: string | null | undefined, lower: string): boolean {
  if (reader === null || reader === undefined || lower === '') return false;
  const vote = comparableText(reader);
  return vote === lower || (vote.length >= 3 && lower.startsWith(vote));
}

/**
 * How well a slot's values fit a field on the pages that have it; 0 when they cannot be it.
 * `companyAt` is the company chosen so far, per page: a place often shares a line with it
 * ("Kaunas - UAB Daltra").
 */
function scoreSlot(
  field: TemplateField,
  slot: Slot,
  pages: readonly PageData[],
  contexts: readonly PageContext[],
  count: number,
  companyAt: Map<number, string> | null,
): number {
  if (slot.part !== null && field !== 'company' && field !== 'location' && field !== 'title')
    return 0;
  let total = 0;
  for (const text of slot.texts.values()) total += text.length;
  if (slot.at.size < 2 || total / slot.at.size > 150) return 0;
  let evidence = 0;
  let chrome = 0;
  let labelled = 0;
  let other = 0;
  let lengths = 0;
  const distinct = new Set<string>();
  // The reader's votes, over the pages that have one (it reads only the first few).
  let votes = 0;
  let agreeing = 0;
  for (const [pageIndex, unitIndex] of slot.at) {
    const page = pages[pageIndex] as PageData;
    const context = contexts[pageIndex] as PageContext;
    const { unit } = page.aligned[unitIndex] as AlignedUnit;
    const text = slot.texts.get(pageIndex) ?? '';
    const lower = slot.lowers.get(pageIndex) ?? '';
    distinct.add(lower);
    lengths += text.length;
    // A heading that changes from page to page is the record's, even inside a site header (a
    // career page's hero holds the job's title in `<header>`).
    if (unit.isChrome && !(field === 'title' && unit.headingLevel !== null)) chrome++;
    const label = slot.part === null || slot.part === 0 ? anchorLabel(page, unitIndex) : null;
    if (label !== null) {
      if (LABEL_FIELDS[label] === field) labelled++;
      else other++;
    }
    const isDate = text.length <= 60 && normaliseDate(stripDatePrefix(text)) !== null;
    // A date or a time ago is never a title, an employer or a place.
    const isWhen = isDate || (text.length <= 40 && RELATIVE_TIME.test(text));
    const reader = page.reader;
    const vote = reader === null ? undefined : reader[field as 'title' | 'company' | 'location'];
    if (vote !== undefined) {
      votes++;
      if (matchesLoosely(vote, lower)) agreeing++;
    }
    let score = 0;
    if (field === 'title') {
      if (lower.length >= 3 && context.pageTitle.includes(lower)) score += 3;
      const level = unit.headingLevel;
      if (level === 1) score += 1.5;
      else if (level !== null && level <= 3) score += 0.75;
      if (level !== null && level <= 2 && isFirstHeading(page, unitIndex)) score += 1;
      // A page without headings or a `<title>` still opens its record with the job's name.
      if (unitIndex === context.firstVariable && text.length <= 120) score += 1;
      if (looksLikeRole(text)) score += 0.5;
      // "Quansight / PyData maintainer": a line of an employer and a role; the role is the title.
      const parts = splitParts(unit.text);
      const isNameAndRole =
        parts.some((part) => looksLikeRole(part)) &&
        parts.some((part) => !looksLikeRole(part) && !looksLikePlace(part));
      if (slot.part === null && isNameAndRole) score -= 1;
      if (slot.part !== null && !(isNameAndRole && looksLikeRole(text))) score -= 5;
      if (unit.isBrand || isWhen || !/\p{L}{2}/u.test(text)) score -= 5;
    } else if (field === 'company') {
      if (LEGAL_FORM.test(text)) score += 1.5;
      else if (ORGANISATION_WORD.test(text)) score += 1;
      // <img src="HitHorizons-dark.png"> beside "Finstat / HitHorizons": the employer's logo.
      const nameWords = lower.match(/\p{L}{3,}/gu) ?? [];
      if (nameWords.some((word) => !LOGO_WORDS.has(word) && context.imageWords.has(word)))
        score += 1.5;
      // "Mango Associates · Boston, MA, US": beside a place on one line, a name is the employer.
      if (slot.part !== null && !looksLikePlace(text)) {
        const others = splitParts(unit.text).filter((_, index) => index !== slot.part);
        if (others.some((other) => looksLikePlace(other))) score += 1.5;
        // "Quansight / PyData maintainer": beside a role, a name is the employer.
        else if (!looksLikeRole(text) && others.some((other) => looksLikeRole(other))) score += 2.5;
      }
      if (lower.length >= 2 && text.length <= 80 && recurs(lower, context)) score += 1;
      if (lower.length >= 2 && context.pageTitle.includes(lower)) score += 1;
      // "Casual Educator at Early Learning - Bendigo": the employer after "at".
      if (lower.length >= 2 && isAfterAt(context.pageTitle, lower)) score += 2;
      if (looksLikePlace(text)) score -= 3;
      if (isWhen || text.length > 80 || !/\p{L}/u.test(text)) score -= 5;
    } else if (field === 'location') {
      if (looksLikePlace(text)) score += 1.5;
      if (lower.length >= 2 && context.pageTitle.includes(lower)) score += 1;
      // The place again in the employer's box or a line of facts.
      if (lower.length >= 2 && text.length <= 80 && recurs(lower, context)) score += 0.5;
      // A line holding the company and something else: the something else is the place.
      const company = companyAt?.get(pageIndex);
      const parts = company === undefined ? [] : splitParts(unit.text).map(comparableText);
      if (company !== undefined && parts.includes(comparableText(company))) {
        if (slot.part === null) score -= 2;
        else if (lower !== comparableText(company)) score += 2.5;
      }
      if (LEGAL_FORM.test(text)) score -= 1.5;
      if (isWhen || text.length > 80 || !/\p{L}/u.test(text)) score -= 5;
    } else if (field === 'datePosted') {
      if (isDate) score += 2;
    } else if (field === 'employmentType') {
      if (text.length <= 60 && findEmploymentType(text) !== null) score += 1.5;
    }
    evidence += score;
  }
  const present = slot.at.size;
  if (present < 2 || chrome > present / 2) return 0;
  if (lengths / present > 150) return 0;
  // A field's value differs between pages (else it is the site's, see findSiteValues).
  if (distinct.size < 2) return 0;
  let score = evidence / present;
  if (votes > 0) score += (2 * agreeing) / votes;
  if (labelled > present / 2) score += 4;
  else if (other > present / 2) score -= 4;
  const [firstPage, firstUnit] = [...slot.at][0] ?? [0, 0];
  const hints = pages[firstPage]?.aligned[firstUnit]?.unit.hints ?? '';
  if (HINTS[field]?.test(hints) === true) score += 1.5;
  // Places repeat across a site's postings; titles and employers mostly do not.
  const distinctShare = distinct.size / present;
  if (field === 'location' && distinctShare <= 0.6) score += 1;
  if (field === 'title' && distinctShare < 0.5) score -= 1.5;
  return score * Math.min(1, present / (count * 0.6));
}

const MIN_SCORE: Record<TemplateField, number> = {
  title: 2.5,
  company: 2.5,
  location: 2.5,
  datePosted: 2,
  employmentType: 2,
  description: 1,
};

function assignFields(
  slots: Map<string, Slot>,
  pages: readonly PageData[],
  count: number,
): Partial<Record<TemplateField, TemplatePath>> {
  const contexts = pages.map(pageContext);
  const fields: Partial<Record<TemplateField, TemplatePath>> = {};
  const chosen = new Map<TemplateField, Slot>();
  const used = new Set<string>();
  const pick = (wanted: readonly TemplateField[], companyAt: Map<number, string> | null): void => {
    const candidates: Candidate[] = [];
    /** Parts of a line that each fall short, but together read as an employer and a role. */
    const lineParts: Candidate[] = [];
    for (const slot of slots.values()) {
      if (slot.at.size < 2 || used.has(slot.slot)) continue;
      for (const field of wanted) {
        const score = scoreSlot(field, slot, pages, contexts, count, companyAt);
        const candidate = { field, slot, score, order: meanIndex(slot, pages) };
        if (score >= MIN_SCORE[field]) candidates.push(candidate);
        else if (slot.part !== null && score >= MIN_SCORE[field] - 1) lineParts.push(candidate);
      }
    }
    // Best first; between equals, the earlier slot (the title above its repeat in a sidebar).
    candidates.sort((a, b) => b.score - a.score || a.order - b.order);
    if (wanted.includes('title') && wanted.includes('company')) {
      // The title and the employer together: an `<h1>` naming the employer above an `<h2>`
      // naming the job reads best as that pair, not as a title and no employer.
      const pair = bestPair(candidates) ?? bestLinePair(lineParts);
      if (pair !== null) candidates.unshift(...pair);
    }
    for (const { field, slot } of candidates) {
      if (chosen.has(field) || used.has(slot.slot)) continue;
      chosen.set(field, slot);
      // One unit serves one field, except a line holding two ("Kaunas - UAB Daltra").
      if (slot.part === null) used.add(slot.slot);
      used.add(slot.id);
      fields[field] = pathOf(slot, pages, count, 'learned');
    }
  };
  pick(['title', 'company'], null);
  pick(['location', 'datePosted', 'employmentType'], chosen.get('company')?.texts ?? null);
  const description = descriptionSlot(slots, pages, used, count);
  if (description !== null) fields.description = pathOf(description, pages, count, 'learned');
  return fields;
}

interface Candidate {
  field: TemplateField;
  slot: Slot;
  score: number;
  order: number;
}

/** Of the best few title and company candidates, the two slots whose scores add up highest. */
function bestPair(candidates: readonly Candidate[]): Candidate[] | null {
  const titles = candidates.filter((candidate) => candidate.field === 'title').slice(0, 4);
  const companies = candidates.filter((candidate) => candidate.field === 'company').slice(0, 4);
  let best: Candidate[] | null = null;
  let bestScore = 0;
  for (const title of titles) {
    for (const company of companies) {
      if (company.slot.slot === title.slot.slot) continue;
      const score = title.score + company.score;
      if (score > bestScore) {
        best = [title, company];
        bestScore = score;
      }
    }
  }
  return best;
}

/**
 * "Quansight / PyData maintainer": the title and the employer as two parts of one line, whose
 * scores fall short alone (a page without headings or a `<title>`) but add up.
 */
function bestLinePair(candidates: readonly Candidate[]): Candidate[] | null {
  let best: Candidate[] | null = null;
  let bestScore = MIN_SCORE.title + MIN_SCORE.company - 1;
  for (const title of candidates) {
    if (title.field !== 'title') continue;
    for (const company of candidates) {
      if (company.field !== 'company' || company.slot.slot !== title.slot.slot) continue;
      if (company.slot.part === title.slot.part) continue;
      const score = title.score + company.score;
      if (score >= bestScore) {
        best = [title, company];
        bestScore = score;
      }
    }
  }
  return best;
}

/** Average relative position of the slot's units in their pages. */
function meanIndex(slot: Slot, pages: readonly PageData[]): number {
  let sum = 0;
  for (const [pageIndex, unitIndex] of slot.at)
    sum += unitIndex / Math.max(1, pages[pageIndex]?.aligned.length ?? 1);
  return sum / slot.at.size;
}

/** The slot holding the most variable text, when it is a description's worth. */
function descriptionSlot(
  slots: Map<string, Slot>,
  pages: readonly PageData[],
  used: ReadonlySet<string>,
  count: number,
): Slot | null {
  let best: Slot | null = null;
  let bestLength = 0;
  for (const slot of slots.values()) {
    if (slot.part !== null || used.has(slot.slot) || slot.at.size < Math.max(2, count * 0.5))
      continue;
    let length = 0;
    for (const [pageIndex, unitIndex] of slot.at) {
      const unit = pages[pageIndex]?.aligned[unitIndex]?.unit;
      if (unit !== undefined && !unit.isChrome) length += unit.text.length;
    }
    length /= slot.at.size;
    if (length > bestLength) {
      best = slot;
      bestLength = length;
    }
  }
  return bestLength >= 200 ? best : null;
}

function mostCommon(values: readonly (string | null)[], minimum: number): string | null {
  const counts = new Map<string, { value: string; count: number }>();
  for (const value of values) {
    if (value === null || value.trim() === '') continue;
    const key = comparableText(value);
    const entry = counts.get(key) ?? { value, count: 0 };
    entry.count++;
    counts.set(key, entry);
  }
  let best: { value: string; count: number } | null = null;
  for (const entry of counts.values()) if (best === null || entry.count > best.count) best = entry;
  return best !== null && best.count >= minimum ? best.value : null;
}

const ABOUT_HEADING = /^(?:about|über|à propos de|over)\s+(.{2,40}?)[:.]?$/i;
const ABOUT_US =
  /^(?:about\s+us|who\s+we\s+are|über\s+uns|à\s+propos(?:\s+de\s+nous)?|over\s+ons)[:.]?$/i;
/** "Drifty is a well-funded, Madison-based …": the name a company's own paragraph starts with. */
const NAME_IS =
  /^((?:\p{Lu}[\p{L}\p{N}&.'’-]*)(?:\s+\p{Lu}[\p{L}\p{N}&.'’-]*){0,3})\s+(?:is|was|are|ist|est|builds|makes|helps)\s/u;

/**
 * The employer a constant "About <Company>" heading names, or the name an "About us" section's
 * first paragraph starts with.
 */
function aboutName(page: PageData): string | null {
  for (const [index, item] of page.aligned.entries()) {
    if (item.unit.headingLevel === null && !/^(?:b|strong)$/.test(item.unit.tag)) continue;
    if (item.unit.text.length > 50) continue;
    if (ABOUT_US.test(item.unit.text)) {
      const next = page.aligned[index + 1]?.unit.text ?? '';
      const match = NAME_IS.exec(next);
      if (match?.[1] !== undefined && !/^(?:We|Our|The|This|It)$/.test(match[1])) return match[1];
      continue;
    }
    const named = ABOUT_HEADING.exec(item.unit.text)?.[1];
    if (
      named !== undefined &&
      !/^(?:us|the\s|this\s|you\b|the\s+(?:role|job|team|position))/i.test(named)
    )
      return named;
  }
  return null;
}

/** A name, not a counter ("2 de 8") or a sentence: letters, at most 80 characters. */
function isNameLike(text: string): boolean {
  return (
    text.length <= 80 &&
    /\p{L}{2}/u.test(text) &&
    !/^\d+\s*(?:\/|of|de|von|sur|z)\s*\d+$/i.test(text) &&
    !/[.!?]\s+\p{Lu}/u.test(text)
  );
}

const COPYRIGHT =
  /(?:©|\(c\)|copyright)\s*(?:\d{4}\s*(?:[-–]\s*\d{4})?\s*)?(?:by\s+)?(\p{Lu}[\p{L}\p{N}&.,'’ -]{1,60}?)(?:[.,]?\s*(?:all\s+rights|\||-\s|$))/iu;

/**
 * Values the same on every page of the site: a career site's company (a constant after a
 * "Company:" label, else og:site_name, an "About …" name, the reader's company, the rest of
 * `<title>`, a copyright line, in that order).
 */
function findSiteValues(
  pages: readonly PageData[],
  fields: Partial<Record<TemplateField, TemplatePath>>,
  count: number,
): Partial<Record<TemplateField, string>> {
  const values: Partial<Record<TemplateField, string>> = {};
  const most = Math.max(2, Math.ceil(count * 0.6));
  // A constant value right after a field's label: "Company: Acme", "Location: Lisbon" on every page.
  for (const field of ['company', 'location', 'employmentType'] as const) {
    if (fields[field] !== undefined) continue;
    const found: (string | null)[] = pages.map((page) => {
      for (const [index, item] of page.aligned.entries()) {
        if (!item.isConstant || item.unit.isLabel || item.unit.isChrome) continue;
        const label = anchorLabel(page, index);
        const text = item.unit.text;
        if (label !== null && LABEL_FIELDS[label] === field && isNameLike(text)) return text;
      }
      return null;
    });
    const value = mostCommon(found, most);
    if (value !== null) values[field] = value;
  }
  if (fields.company !== undefined || values.company !== undefined) return values;

  const readerVotes = pages.filter((page) => page.reader !== null);
  const readerCompany = mostCommon(
    readerVotes.map((page) => page.reader?.company ?? null),
    Math.max(2, Math.ceil(readerVotes.length * 0.6)),
  );
  const siteName = mostCommon(
    pages.map((page) =>
      page.meta.ogSiteName === null ? null : cleanSiteName(page.meta.ogSiteName),
    ),
    most,
  );
  const titleField = fields.title;
  const titleRest = mostCommon(
    pages.map((page) => {
      // "analista de finanzas." under "Trabajo de Analista de Finanzas en Lampa | Randstad Chile".
      const title =
        titleField === undefined
          ? null
          : (valueAt(page, titleField)?.replace(/[\s.]+$/, '') ?? null);
      if (title === null || title === '') return null;
      return (
        companyFromPageTitle(page.meta.title, title) ??
        companyFromPageTitle(page.meta.ogTitle, title)
      );
    }),
    most,
  );
  const copyright = mostCommon(
    pages.map((page) => {
      for (let index = page.aligned.length - 1; index >= 0; index--) {
        const item = page.aligned[index] as AlignedUnit;
        if (!item.isConstant || item.unit.text.length > 200) continue;
        const match = COPYRIGHT.exec(item.unit.text);
        const name = match?.[1]?.replace(/[\s,.]+$/, '').trim();
        if (name !== undefined && name.length >= 2) return name;
      }
      return null;
    }),
    most,
  );
  const about = mostCommon(
    pages.map((page) => aboutName(page)),
    most,
  );
  const company = [siteName, about, readerCompany, titleRest, copyright].find(
    (name): name is string => name !== null && isNameLike(name),
  );
  if (company !== undefined) values.company = company;
  return values;
}

/**
 * The record's region on each page, from the first field's unit to the last (the description
 * included): its constants ("Job Overview", "Location:") and keys, on most pages.
 */
function recordRegion(
  pages: readonly PageData[],
  slots: Map<string, Slot>,
  fields: Partial<Record<TemplateField, TemplatePath>>,
): { constants: Set<string>; keys: Set<string> } {
  const constantPages = new Map<string, number>();
  const keyPages = new Map<string, number>();
  const fieldSlots = Object.values(fields).map((path) => slots.get(path.slot));
  let regions = 0;
  for (const [pageIndex, page] of pages.entries()) {
    const indices = fieldSlots
      .map((slot) => slot?.at.get(pageIndex))
      .filter((index): index is number => index !== undefined);
    if (indices.length === 0) continue;
    regions++;
    // The labels just before the first field belong to it ("Job title:" above the title).
    const start = Math.max(0, Math.min(...indices) - 2);
    const end = Math.max(...indices);
    const seenConstants = new Set<string>();
    const seenKeys = new Set<string>();
    for (let index = start; index <= end; index++) {
      const item = page.aligned[index];
      if (item === undefined || item.unit.isChrome) continue;
      if (item.isConstant) seenConstants.add(item.constantId);
      seenKeys.add(item.unit.key);
    }
    for (const id of seenConstants) constantPages.set(id, (constantPages.get(id) ?? 0) + 1);
    for (const key of seenKeys) keyPages.set(key, (keyPages.get(key) ?? 0) + 1);
  }
  const constants = new Set<string>();
  const keys = new Set<string>();
  for (const [id, seen] of constantPages) if (seen >= Math.max(2, regions * 0.6)) constants.add(id);
  for (const [key, seen] of keyPages) if (seen >= Math.max(2, regions * 0.6)) keys.add(key);
  return { constants, keys };
}

/**
 * The template's fingerprint: its record constants found on nearly every page, hashed. Pages of
 * one template share them however many are learned; a redesign changes keys or texts.
 */
function shapeOf(
  recordConstants: ReadonlySet<string>,
  pages: readonly PageData[],
  count: number,
): string {
  const onPages = new Map<string, number>();
  for (const page of pages) {
    const seen = new Set<string>();
    for (const item of page.aligned)
      if (recordConstants.has(item.constantId)) seen.add(item.constantId);
    for (const id of seen) onPages.set(id, (onPages.get(id) ?? 0) + 1);
  }
  const stable = [...onPages]
    .filter(([, seen]) => seen >= count * 0.8)
    .map(([id]) => id)
    .sort();
  let hash = 0x811c9dc5;
  for (const character of stable.join('|')) {
    hash ^= character.charCodeAt(0);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${stable.length}-${hash.toString(36)}`;
}

/** Unit prefixes ("Miesto:") on a third of the pages or more: the template's labels. */
function commonPrefixes(pages: readonly TemplatePage[], count: number): Set<string> {
  const support = new Map<string, number>();
  for (const page of pages) {
    const seen = new Set<string>();
    for (const unit of page.units) {
      const prefix = prefixOf(unit);
      if (prefix !== null) seen.add(prefix);
    }
    for (const prefix of seen) support.set(prefix, (support.get(prefix) ?? 0) + 1);
  }
  const labels = [...support]
    .filter(([, pagesWith]) => pagesWith >= Math.max(2, count * 0.3))
    .map(([prefix]) => prefix);
  return new Set(labels.slice(0, MAX_PREFIX_LABELS));
}

/** `<title>`s that two or more pages share ("Gojek Tech"): a title check cannot use them. */
function sharedPageTitles(pages: readonly PageData[]): string[] {
  const counts = new Map<string, number>();
  for (const page of pages) {
    const title = comparableText(`${page.meta.title ?? ''} | ${page.meta.ogTitle ?? ''}`);
    counts.set(title, (counts.get(title) ?? 0) + 1);
  }
  return [...counts]
    .filter(([title, count]) => count >= 2 && title.length <= 300)
    .map(([title]) => title)
    .slice(0, 20);
}

/** Constant texts that may never be a record's value, within the template's size budget. */
function templateTexts(pages: readonly PageData[], maxChars: number): string[] {
  const texts = new Set<string>();
  let chars = 0;
  for (const page of pages) {
    for (const item of page.aligned) {
      if (!item.isConstant || item.unit.text.length > 150) continue;
      const text = comparableText(item.unit.text);
      if (texts.has(text)) continue;
      if (chars + text.length > maxChars) return [...texts];
      texts.add(text);
      chars += text.length;
    }
  }
  return [...texts];
}
