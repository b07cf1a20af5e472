import { createLazyDom, type LazyDom } from './dom.js';
import { findDomPosting, MAX_DOM_POSTING_CHARS, mayBeDomPosting } from './dom-posting.js';
import {
  collectJobPostings,
  createJobPostingSearch,
  indexNodesById,
  mapJobPosting,
  readText,
  type JobPostingSearch,
  type JsonObject,
} from './json-ld-mapping.js';
import {
  findJsonLdBlocks,
  parseJsonLdText,
  scanJsonLdScripts,
  UNPARSEABLE,
} from './json-ld-scan.js';
import { findJobPostingItem, mayHaveJobPostingItem, MICRODATA, RDFA } from './item-reader.js';
import {
  cleanSiteName,
  companyFromPageTitle,
  readPageMeta,
  titleFromPageMeta,
  type PageMeta,
} from './page-meta.js';
import { completeFromTemplate, readTemplatePosting } from './template/extract.js';
import type { SiteTemplate, TemplateReading } from './template/types.js';
import type { ExtractedPosting, ExtractionResult, FieldSource } from './types.js';

export interface ExtractPostingOptions {
  /** The page's URL. Not needed by the current paths; kept for resolving relative links later. */
  url?: string;
  /**
   * The site's template (learnSiteTemplate): for a page without structured data, a page that
   * does not fit it is not a posting, one that fits is read from its slots first; template text
   * is never a value. A structured-data posting may take a missing title or company from it.
   */
  template?: SiteTemplate;
  /**
   * Told how a page without structured data agreed with `template` (whether it fits, a path that
   * found nothing, the required fields it has no path for): how the site's template is kept
   * up to date (decision 0028).
   */
  onTemplateFit?: (fit: TemplateFit) => void;
}

/** How one page agreed with its site's template. */
export type TemplateFit = Pick<TemplateReading, 'fits' | 'stale' | 'unread'>;

/**
 * A page whose structured data holds this many different postings is a list of them (search
 * results, a careers index), not one posting.
 */
const LISTING_POSTING_COUNT = 3;

/**
 * Extracts the job posting a page describes, or returns null when the page is not one posting.
 *
 * In order: JSON-LD (scanned from the raw string, no DOM), microdata, RDFa, and last the page's
 * markup itself (see dom-posting.ts for the bar a page must clear there). A DOM is built only
 * for the later paths, so a page whose JSON-LD has the posting costs a string scan, a JSON.parse
 * and two string walks over the description (the clean-HTML check and its text). A posting whose
 * structured data lacks a title or company gets them from the page's `<h1>` / og:title /
 * `<title>` and og:site_name (provenance `dom`).
 *
 * A JobPosting inside an ItemList, or three or more different postings on one page, make the page
 * a listing: null.
 */
export function extractPosting(
  html: string,
  options: ExtractPostingOptions = {},
): ExtractionResult | null {
  const { template } = options;
  const search = findJsonLdJobPostings(html);
  const distinct = new Set(search.postings.map(postingKey));
  if (distinct.size >= LISTING_POSTING_COUNT) return null;
  const jsonLdNode = search.postings[0];
  if (jsonLdNode !== undefined) {
    const posting = mapJobPosting(jsonLdNode, { resolveReference: createResolver(html) });
    const result = withProvenance(posting, 'json-ld');
    if (template !== undefined) completeFromTemplate(result, html, template);
    return completeFromPage(result, html);
  }
  if (search.hasListedPosting) return null;

  const dom = createLazyDom(html);
  const itemNode = findStructuredItem(html, dom);
  if (itemNode !== null) {
    const result = withProvenance(mapJobPosting(itemNode.node), itemNode.source);
    if (template !== undefined) completeFromTemplate(result, html, template, dom());
    return completeFromPage(result, html);
  }

  if (template !== undefined && html.length <= MAX_DOM_POSTING_CHARS) {
    const posting = readTemplatePosting(
      html,
      dom(),
      template,
      search.types,
      options.onTemplateFit,
    );
    // 'foreign': a page of another template (an older design) is read as without one.
    if (posting !== 'foreign') return withProvenanceOrNull(posting);
  }
  if (!mayBeDomPosting(html)) return null;
  const domPosting = findDomPosting(dom(), readPageMeta(html), { jsonLdTypes: search.types });
  return domPosting === null ? null : withProvenance(domPosting, 'dom');
}

/**
 * The page's JobPostings across its JSON-LD blocks. Scanning stops after the first posting
 * unless the rest of the page mentions another (cheap to check, and listing pages do).
 */
function findJsonLdJobPostings(html: string): JobPostingSearch {
  const search = createJobPostingSearch();
  scanJsonLdScripts(html, (rawText, end) => {
    const parsed = parseJsonLdText(rawText);
    if (parsed !== UNPARSEABLE) collectJobPostings(parsed, search);
    return search.postings.length > 0 && !html.includes('JobPosting', end);
  });
  return search;
}

function postingKey(node: JsonObject): string {
  return `${readText(node.title) ?? ''}\u0000${readText(node.url) ?? ''}\u0000${readText(node.identifier) ?? ''}`;
}

/** Resolves `@id` references against every JSON-LD block of the page, indexed on first use. */
function createResolver(html: string): (id: string) => JsonObject | null {
  let index: Map<string, JsonObject> | undefined;
  return (id) => {
    index ??= indexNodesById(findJsonLdBlocks(html));
    return index.get(id) ?? null;
  };
}

function findStructuredItem(
  html: string,
  dom: LazyDom,
): { node: JsonObject; source: FieldSource } | null {
  for (const syntax of [MICRODATA, RDFA]) {
    if (!mayHaveJobPostingItem(html, syntax)) continue;
    const node = findJobPostingItem(dom(), syntax);
    if (node !== null) return { node, source: syntax.source };
  }
  return null;
}

/** Title and company from the page when the structured data left them out. */
function completeFromPage(result: ExtractionResult, html: string): ExtractionResult {
  const { posting, provenance } = result;
  if (posting.title !== null && posting.company !== null) return result;
  const meta: PageMeta = readPageMeta(html);
  if (posting.company === null && meta.ogSiteName !== null) {
    posting.company = cleanSiteName(meta.ogSiteName);
  }
  if (posting.title === null) {
    posting.title = titleFromPageMeta(meta, posting.company);
    if (posting.title !== null) provenance.title = 'dom';
  }
  if (posting.company === null && posting.title !== null) {
    // "Nurse Practitioner | Evergreen Clinics": what the title says besides the job.
    posting.company = companyFromPageTitle(meta.title ?? meta.ogTitle, posting.title);
  }
  if (posting.company !== null) provenance.company ??= 'dom';
  return result;
}

function withProvenance(posting: ExtractedPosting, source: FieldSource): ExtractionResult {
  const provenance: ExtractionResult['provenance'] = {};
  for (const field of Object.keys(posting) as (keyof ExtractedPosting)[]) {
    if (posting[field] !== null) provenance[field] = source;
  }
  return { posting, provenance };
}

function withProvenanceOrNull(posting: ExtractedPosting | null): ExtractionResult | null {
  return posting === null ? null : withProvenance(posting, 'dom');
}
