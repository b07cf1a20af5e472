/**
 * Reading one page with a site's template, and grounding labels (values a model read from a page)
 * into paths of the template.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { hasPageTitle, isInPageTitle, pathOf, valueAt } from './paths.js';
import { parseTemplatePage, type TemplatePage } from './page.js';
import { alignUnits, comparableText, type AlignedUnit } from './slots.js';
import { pageFormOf } from './site-name.js';
import { findInnerPart, splitPrefixes, type InnerPart } from './units.js';
import {
  REQUIRED_FIELDS,
  TEMPLATE_FIELDS,
  type SiteTemplate,
  type TemplateField,
  type TemplateReading,
} from './types.js';

/** A page fits when it has this share of the record's keys and of its constants. */
const FIT_KEYS = 0.6;
const FIT_CONSTANTS = 0.5;
/** A page with this many units at a title's key, one per posting page, lists postings. */
const LISTING_TITLES = 3;
/**
 * Designs a template holds beside its main one: as many are learned, and no more are read however
 * many a stored template holds.
 */
export const MAX_VARIANTS = 2;

export interface AlignedPage extends TemplatePage {
  aligned: AlignedUnit[];
}

/** A parsed page aligned on one design's constants. */
export function alignParsed(page: TemplatePage, template: SiteTemplate): AlignedPage {
  const constants = new Set(template.constants);
  const units = splitPrefixes(page.units, new Set(template.prefixLabels));
  return { ...page, units, aligned: alignUnits(units, (id) => constants.has(id)) };
}

export interface DesignReading {
  /** The page aligned on `design`, or null when it cannot be parsed. */
  page: AlignedPage | null;
  /** The design of the site's template the page fits: the main one, else a variant; the main
   *  one when it fits none. */
  design: SiteTemplate;
  reading: TemplateReading;
}

/** The page read with the first design of the site's template that it fits. */
export function readDesign(html: string, template: SiteTemplate, $?: CheerioAPI): DesignReading {
  const parsed = isTemplate(template) ? parseTemplatePage(html, $) : null;
  if (parsed === null)
    return { page: null, design: template, reading: readAligned(null, template) };
  const page = alignParsed(parsed, template);
  const reading = readAligned(page, template);
  // A page in the main design's chrome but not its record is a listing or another page of the
  // site, whatever other design it resembles.
  if (reading.fits || !Array.isArray(template.variants) || sharesChrome(page, template))
    return { page, design: template, reading };
  for (const variant of template.variants.slice(0, MAX_VARIANTS)) {
    if (!isTemplate(variant)) continue;
    const variantPage = alignParsed(parsed, variant);
    const variantReading = readAligned(variantPage, variant);
    if (variantReading.fits) return { page: variantPage, design: variant, reading: variantReading };
  }
  return { page, design: template, reading };
}

/**
 * Whether the page has most of the record's keys and half its constants; or nearly all its keys
 * and a title, when optional sections leave out some constants (a posting without "Salary").
 */
function fits(page: AlignedPage, template: SiteTemplate, hasTitle: boolean): boolean {
  const keys = new Set<string>();
  const constants = new Set<string>();
  const titleKey = template.fields.title?.isKeyUnique === true ? template.fields.title.key : null;
  let titles = 0;
  for (const item of page.aligned) {
    keys.add(item.unit.key);
    if (item.isConstant) constants.add(item.constantId);
    else if (item.unit.key === titleKey) titles++;
  }
  // The title's place, alone on a posting, repeated down the page: a listing of the records.
  if (titles >= LISTING_TITLES) return false;
  const keyShare =
    template.recordKeys.length === 0
      ? 1
      : template.recordKeys.filter((key) => keys.has(key)).length / template.recordKeys.length;
  const constantShare =
    template.recordConstants.length === 0
      ? 1
      : template.recordConstants.filter((id) => constants.has(id)).length /
        template.recordConstants.length;
  if (keyShare < FIT_KEYS) return false;
  return (
    constantShare >= FIT_CONSTANTS ||
    (hasTitle && keyShare >= 0.8 && constantShare >= FIT_CONSTANTS / 2)
  );
}

/**
 * Whether the page shares the site's chrome (header, footer): a page that does not fit the
 * record but shares the chrome is another kind of page of the same site; one that shares
 * neither was made from another template (an older design), of which this one knows nothing.
 */
export function sharesChrome(page: AlignedPage, template: SiteTemplate): boolean {
  // A site without chrome gives nothing to recognise its other pages by.
  if (template.chromeConstants.length === 0) return false;
  const constants = new Set<string>();
  for (const item of page.aligned) if (item.isConstant) constants.add(item.constantId);
  const shared = template.chromeConstants.filter((id) => constants.has(id)).length;
  return shared / template.chromeConstants.length >= FIT_CONSTANTS;
}

/** What the template reads from an aligned page. */
export function readAligned(page: AlignedPage | null, template: SiteTemplate): TemplateReading {
  const unread = REQUIRED_FIELDS.filter(
    (field) => template.fields[field] === undefined && template.siteValues[field] === undefined,
  );
  if (page === null || !isTemplate(template))
    return { fits: false, stale: false, fields: {}, unread };
  const fields: Partial<Record<TemplateField, string>> = {};
  let stale = false;
  for (const field of TEMPLATE_FIELDS) {
    const path = template.fields[field];
    let value = path === undefined ? null : valueAt(page, path);
    // A title that every learning page repeated in its <title> and this page does not: the unit
    // in the title's place holds something else.
    const isChecked =
      path?.isInPageTitle === true && hasPageTitle(page.meta, template.sharedPageTitles);
    if (value !== null && isChecked && !isInPageTitle(value, page.meta)) value = null;
    if (value !== null) fields[field] = value;
    else if (path !== undefined && (!path.isOptional || path.source === 'labelled')) stale = true;
    const siteValue = template.siteValues[field];
    if (fields[field] !== undefined || siteValue === undefined) continue;
    // The site's company as this page writes it, and none where its text never names it.
    const siteForm = field === 'company' ? pageFormOf(siteValue, unitTexts(page)) : siteValue;
    if (siteForm !== null) fields[field] = siteForm;
  }
  const isFit = fits(page, template, fields.title !== undefined);
  return { fits: isFit, stale: isFit && stale, fields: isFit ? fields : {}, unread };
}

function* unitTexts(page: AlignedPage): Iterable<string> {
  for (const item of page.aligned) yield item.unit.text;
}

export function readWithTemplate(html: string, template: SiteTemplate): TemplateReading {
  if (!isTemplate(template))
    return { fits: false, stale: false, fields: {}, unread: [...REQUIRED_FIELDS] };
  return readDesign(html, template).reading;
}

/** Whether the texts of the template's constants hold this text: template, never a value. */
export function createTemplateTextVeto(template: SiteTemplate): (text: string) => boolean {
  const texts = new Set(template.templateTexts);
  return (text) => texts.has(comparableText(text));
}

/**
 * Grounds labels into the template: a label counts only when its value is the text of one
 * variable unit of this page (whitespace-collapsed, case-insensitive; a value after a label such
 * as "Location: Lisbon" is a unit of its own). A value found on a constant unit right after a
 * field's label ("Company: Acme" on every page) becomes the site's value for that field.
 */
export function labelTemplate(
  template: SiteTemplate,
  html: string,
  labels: Partial<Record<TemplateField, string>>,
): { template: SiteTemplate; grounded: TemplateField[] } {
  if (!isTemplate(template) || typeof labels !== 'object' || labels === null)
    return { template, grounded: [] };
  const { page, design } = readDesign(html, template);
  if (page === null) return { template, grounded: [] };
  const fields = { ...design.fields };
  const siteValues = { ...design.siteValues };
  const grounded: TemplateField[] = [];
  for (const field of TEMPLATE_FIELDS) {
    const label = labels[field];
    if (typeof label !== 'string') continue;
    const wanted = comparableText(label);
    if (wanted === '') continue;
    const matches = page.aligned
      .map((item, index) => ({ item, index }))
      .filter(({ item }) => comparableText(item.unit.text) === wanted);
    const variable = matches.filter(({ item }) => !item.isConstant);
    const slots = new Set(variable.map(({ item }) => item.slot));
    const [first] = variable;
    if (
      first !== undefined &&
      (slots.size === 1 || variable.some(({ item }) => !item.unit.isChrome))
    ) {
      const chosen = variable.find(({ item }) => !item.unit.isChrome) ?? first;
      fields[field] = pathOf(
        {
          slot: chosen.item.slot,
          key: chosen.item.unit.key,
          part: null,
          at: new Map([[0, chosen.index]]),
        },
        [page],
        1,
        'labelled',
      );
      grounded.push(field);
      continue;
    }
    // "Payments Initech" of `<span class="m1">Payments</span> <span class="m2">Initech</span>`:
    // the label is one inline element of a variable unit.
    const inner = findInner(page, wanted);
    if (inner !== null) {
      fields[field] = {
        ...pathOf(
          {
            slot: inner.item.slot,
            key: inner.item.unit.key,
            part: null,
            at: new Map([[0, inner.index]]),
          },
          [page],
          1,
          'labelled',
        ),
        inner: inner.part,
      };
      grounded.push(field);
      continue;
    }
    const afterLabel = matches.find(
      ({ item, index }) => item.isConstant && page.aligned[index - 1]?.unit.isLabel === true,
    );
    if (afterLabel !== undefined) {
      siteValues[field] = afterLabel.item.unit.text;
      grounded.push(field);
    }
  }
  if (design === template) return { template: { ...template, fields, siteValues }, grounded };
  // A page of another design labels that design.
  const variants = (template.variants ?? []).map((variant) =>
    variant === design ? { ...variant, fields, siteValues } : variant,
  );
  return { template: { ...template, variants }, grounded };
}

/** The variable unit (outside the chrome first) one of whose inline elements reads `wanted`. */
function findInner(
  page: AlignedPage,
  wanted: string,
): { item: AlignedUnit; index: number; part: InnerPart } | null {
  let found: { item: AlignedUnit; index: number; part: InnerPart } | null = null;
  for (const [index, item] of page.aligned.entries()) {
    if (item.isConstant || item.unit.text.length > 300) continue;
    if (!comparableText(item.unit.text).includes(wanted)) continue;
    const part = findInnerPart(item.unit, wanted);
    if (part === null) continue;
    if (!item.unit.isChrome) return { item, index, part };
    found ??= { item, index, part };
  }
  return found;
}

/** A template as stored: anything else (an older format, a hand-edited row) reads nothing. */
function isTemplate(template: SiteTemplate): boolean {
  return (
    typeof template === 'object' &&
    template !== null &&
    template.format === 1 &&
    Array.isArray(template.constants) &&
    Array.isArray(template.recordConstants) &&
    Array.isArray(template.chromeConstants) &&
    Array.isArray(template.recordKeys) &&
    Array.isArray(template.templateTexts) &&
    Array.isArray(template.sharedPageTitles) &&
    Array.isArray(template.prefixLabels) &&
    typeof template.fields === 'object' &&
    typeof template.siteValues === 'object'
  );
}
