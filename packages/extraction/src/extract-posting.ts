import { parseJsonLdText, scanJsonLdScripts, UNPARSEABLE } from './json-ld-scan.js';
import { findJobPostingNode, mapJobPosting, type JsonObject } from './json-ld-mapping.js';
import { findMicrodataJobPosting } from './microdata.js';
import type { ExtractedPosting, ExtractionResult, FieldSource } from './types.js';

export interface ExtractPostingOptions {
  /** The page's URL. Not needed by the current paths; the wider DOM paths will resolve links with it. */
  url?: string;
}

/**
 * Extracts the job posting a page describes, or returns null when the page does not describe
 * one (no JobPosting in JSON-LD or microdata: nothing is guessed from the visible text).
 *
 * JSON-LD comes first and is read without building a DOM; cheerio is loaded only for pages
 * without a JSON-LD JobPosting.
 */
export function extractPosting(
  html: string,
  _options: ExtractPostingOptions = {},
): ExtractionResult | null {
  const jsonLdNode = findJsonLdJobPosting(html);
  if (jsonLdNode !== null) return withProvenance(mapJobPosting(jsonLdNode), 'json-ld');
  const microdataNode = findMicrodataJobPosting(html);
  if (microdataNode !== null) return withProvenance(mapJobPosting(microdataNode), 'microdata');
  return null;
}

/** The first JobPosting across the page's JSON-LD blocks; scanning stops as soon as one is found. */
function findJsonLdJobPosting(html: string): JsonObject | null {
  let found: JsonObject | null = null;
  scanJsonLdScripts(html, (rawText) => {
    const parsed = parseJsonLdText(rawText);
    if (parsed !== UNPARSEABLE) found = findJobPostingNode(parsed);
    return found !== null;
  });
  return found;
}

function withProvenance(posting: ExtractedPosting, source: FieldSource): ExtractionResult {
  const provenance: ExtractionResult['provenance'] = {};
  for (const field of Object.keys(posting) as (keyof ExtractedPosting)[]) {
    if (posting[field] !== null) provenance[field] = source;
  }
  return { posting, provenance };
}
