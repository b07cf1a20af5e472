/**
 * extractPosting's use of a site template (see extract-posting.ts): a page without structured
 * data is a posting when it fits the template and its title slot holds a value; its fields come
 * from the template's slots, and the markup reader fills the rest with the template's text
 * vetoed. A page that does not fit (a listing or company page of the same site) is none.
 */
import { emptyPostingFields } from '@gleaner/db/posting-fields';
import type { CheerioAPI } from 'cheerio/slim';
import { normaliseDate } from '../dates.js';
import { findDomPosting, mayBeDomPosting } from '../dom-posting.js';
import { findEmploymentType } from '../employment-type.js';
import { parseLocationText } from '../location.js';
import type { ExtractedPosting, ExtractionResult } from '../types.js';
import { createTemplateTextVeto, readDesign, sharesChrome } from './read.js';
import { isSameName } from './site-name.js';
import { comparableText } from './slots.js';
import type { SiteTemplate, TemplateField, TemplateReading } from './types.js';
import { looksLikePostingTitle, stripDatePrefix, withoutAside } from './values.js';

/** Shares of learning pages whose title names a role above which every posting's must. */
const ROLE_SHARE = 0.95;
const ROLE_SHARE_WITHOUT_CONSTANTS = 0.75;

export function readTemplatePosting(
  html: string,
  $: CheerioAPI,
  siteTemplate: SiteTemplate,
  jsonLdTypes: ReadonlySet<string>,
  onReading?: (reading: TemplateReading) => void,
): ExtractedPosting | 'foreign' | null {
  // The design of the site the page fits; the rest is read with that design's template.
  const { page, design: template, reading } = readDesign(html, siteTemplate, $);
  onReading?.(reading);
  if (page === null) return null;
  if (!reading.fits) return sharesChrome(page, template) ? null : 'foreign';
  const isTemplateText = createTemplateTextVeto(template);
  const hasTitle = reading.fields.title !== undefined;
  // A page of this kind without the title its template has on most pages is another page
  // made of the same parts (a home page's hero); without a learned title slot, the page must
  // convince the reader on its own.
  const titlePath = template.fields.title;
  if (!hasTitle && titlePath !== undefined && !titlePath.isOptional) return null;
  if (hasTitle && !isPostingTitle(reading.fields.title ?? '', template)) return null;
  if (!hasTitle && !mayBeDomPosting(html)) return null;
  const posting = findDomPosting($, page.meta, {
    jsonLdTypes,
    isTemplateText,
    isKnownPosting: hasTitle,
    pageIndex: page.index,
  });
  if (posting === null && !hasTitle) return null;
  const record = posting ?? emptyPostingFields();
  // Template text is never a value: the reader's company or place that is the site's chrome
  // ("Careers", the header's brand word) goes, unless the template holds it as the site's value.
  for (const field of ['company', 'location'] as const) {
    const value = record[field];
    if (value === null) continue;
    const isSiteValue =
      comparableText(template.siteValues[field] ?? '\u0000') === comparableText(value);
    if (isTemplateText(value) && !isSiteValue) record[field] = null;
  }
  // The site's own name that this page's text never shows (only its logo or `<title>` do): the
  // page shows no company.
  const siteCompany = template.siteValues.company;
  if (
    siteCompany !== undefined &&
    reading.fields.company === undefined &&
    record.company !== null &&
    isSameName(record.company, siteCompany)
  )
    record.company = null;
  applyFields(record, reading.fields);
  if (record.title === null || record.title === '') return null;
  return record;
}

/**
 * Whether the title in the record's place is a job's. Where nearly every learning page's title
 * names a role or a job, one that names none is another page of the same parts: an exam result
 * in a notice board's posting template, an "About us" or "Contact" page of a career site whose
 * pages share no record constants (then the titles alone tell a posting, and most is enough).
 */
function isPostingTitle(title: string, template: SiteTemplate): boolean {
  const share = template.titleRoleShare;
  if (share === undefined) return true;
  const required =
    template.recordConstants.length === 0 ? ROLE_SHARE_WITHOUT_CONSTANTS : ROLE_SHARE;
  return share < required || looksLikePostingTitle(title);
}

/** A structured-data posting's missing title or company, from the template when the page fits. */
export function completeFromTemplate(
  result: ExtractionResult,
  html: string,
  template: SiteTemplate,
  $?: CheerioAPI,
): void {
  const { posting, provenance } = result;
  if (posting.title !== null && posting.company !== null) return;
  const { reading } = readDesign(html, template, $);
  if (!reading.fits) return;
  for (const field of ['title', 'company'] as const) {
    const value = reading.fields[field];
    if (posting[field] !== null || value === undefined) continue;
    posting[field] = value;
    provenance[field] = 'dom';
  }
}

function applyFields(
  posting: ExtractedPosting,
  fields: Partial<Record<TemplateField, string>>,
): void {
  if (fields.title !== undefined) posting.title = fields.title;
  if (fields.company !== undefined) posting.company = withoutAside(fields.company);
  if (fields.location !== undefined) {
    // The place as the page writes it; its parts as the reader splits them.
    const location = withoutAside(fields.location);
    const parsed = parseLocationText(location);
    posting.location = location;
    posting.locationCity = parsed.city;
    posting.locationRegion = parsed.region;
    posting.locationCountry = parsed.country;
    posting.isRemote = parsed.isRemote ?? posting.isRemote;
  }
  const date =
    fields.datePosted === undefined ? null : normaliseDate(stripDatePrefix(fields.datePosted));
  if (date !== null) posting.datePosted = date;
  const type =
    fields.employmentType === undefined ? null : findEmploymentType(fields.employmentType);
  if (type !== null) posting.employmentType = type;
}
