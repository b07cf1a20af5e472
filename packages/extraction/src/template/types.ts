/**
 * A site's template as learned from its pages: plain JSON (stored in Postgres jsonb, passed to
 * worker threads), under ~64 KB.
 */
import type { InnerPart } from './units.js';

/** The fields a template reads. */
export type TemplateField =
  'title' | 'company' | 'location' | 'datePosted' | 'employmentType' | 'description';

export const TEMPLATE_FIELDS: readonly TemplateField[] = [
  'title',
  'company',
  'location',
  'datePosted',
  'employmentType',
  'description',
];

/** A posting is not usable without these. */
export const REQUIRED_FIELDS: readonly TemplateField[] = ['title', 'company', 'location'];

/**
 * Where a field's value sits on a page of the template: the variable unit at `key` that is the
 * `nth` such unit after the constant `anchor` (null: from the page's start). See slots.ts.
 */
export interface TemplatePath {
  slot: string;
  key: string;
  /** One part of the unit's text split at " - ", " | ", " · " (splitParts), or the whole. */
  part: number | null;
  /**
   * The inline element of the unit that holds the value, when the unit's line holds others too
   * (`<span class="m2">Initech</span>` beside "Payments"); grounded from a label.
   */
  inner?: InnerPart;
  /** Whether the key alone finds the value (one variable unit at the key on the learning pages). */
  isKeyUnique: boolean;
  /** Learned from the site's pages, or grounded from a label (labelTemplate). */
  source: 'learned' | 'labelled';
  /** Held by fewer than most learning pages: a page without it is not a stale template. */
  isOptional: boolean;
  /**
   * Its value is in the page's `<title>` or og:title on most learning pages: on a page
   * where it is not, the unit there is something else (a home page's hero heading).
   */
  isInPageTitle: boolean;
}

export interface SiteTemplate {
  format: 1;
  /** Fingerprint of the template's record constants: the same for pages of one template. */
  shape: string;
  /** Pages the template was learned from. */
  pages: number;
  /**
   * Ids of the units that are the same on most pages (see slots.ts constantId): the anchors
   * paths are counted from. Site chrome included.
   */
  constants: string[];
  /** The record's constants ("Job Overview", "Location:"): a page of this kind shares them. */
  recordConstants: string[];
  /**
   * The site's other constants on nearly every page (header, footer, side column): a page that
   * shares them but not the record is another kind of page of the site (a listing).
   */
  chromeConstants: string[];
  /** Keys of the record's region on most pages: a page of this kind has most of them. */
  recordKeys: string[];
  /** Labels in any language found as the first words of a unit on many pages ("miesto"). */
  prefixLabels: string[];
  /** Page titles (`<title>`) several learning pages share, lower-cased: they name no record. */
  sharedPageTitles: string[];
  /** Constant texts up to 150 characters, lower-cased: never a value of a record. */
  templateTexts: string[];
  fields: Partial<Record<TemplateField, TemplatePath>>;
  /**
   * The share of learning pages whose title names a role or a job ("Engineer", "Recruitment
   * 2026"), of those with a title. Absent in templates learned before it was kept.
   */
  titleRoleShare?: number;
  /**
   * Templates of the site's other designs (an older build, a second page layout), each learned
   * from pages this one does not fit; a page is read with the first design it fits. Variants
   * have none of their own; `shape` is this, the main design's.
   */
  variants?: SiteTemplate[];
  /** Values that are the same on every page of the site (a career site's company). */
  siteValues: Partial<Record<TemplateField, string>>;
}

/** What a template reads from one page. */
export interface TemplateReading {
  /** The page shares the template's record constants: it is a page of this kind. */
  fits: boolean;
  /** The page fits, but a path the template holds (learned or labelled) no longer finds its value. */
  stale: boolean;
  fields: Partial<Record<TemplateField, string>>;
  /** Required fields (title, company, location) the template has no path or site-wide value for. */
  unread: TemplateField[];
}
