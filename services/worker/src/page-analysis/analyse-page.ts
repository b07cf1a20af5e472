import { createHash } from 'node:crypto';
import type { ExtractedFields } from '@gleaner/db';
import { textSha256 } from '@gleaner/extraction';
import { decodeBody } from '@gleaner/http/charset';
import { LISTING_CONTENT_TYPE } from './page-fields.js';

/** A fetched page (or ATS listing payload) and what the crawl already knows of its posting. */
export interface PageInput {
  body: Uint8Array;
  contentType: string | null;
  siteKind: string;
  url: string;
  /** The fingerprints of the posting's last extraction; null when it was never extracted. */
  previous: { bodySha256: string | null; textSha256: string | null } | null;
}

/** What the CPU-bound part of a crawl makes of a page. */
export interface PageAnalysis {
  sha256: string;
  /** sha256 of the page's visible words; null for ATS payloads. */
  textSha256: string | null;
  /** The raw bytes or the visible words are those of the last extraction: nothing to extract. */
  unchanged: boolean;
  /** The extracted fields, when extraction succeeded (never set for an unchanged page). */
  fields?: ExtractedFields;
  /** Why extraction failed, when it did: the extract job takes the stored body from there. */
  extractionError?: string;
}

/** Fields from a page: its HTML when it is one (undefined for an ATS payload), and its bytes. */
export type FieldExtractor = (
  input: PageInput,
  body: Buffer,
  html: string | undefined,
) => ExtractedFields;

/**
 * Fingerprints a page, decides whether it changed and, when it did, extracts it with `extract`:
 * the CPU-bound part of a crawl. Pure and synchronous, so that it runs in the page analyser's
 * threads and on the event loop alike, with the same results. Imports nothing that loads a
 * database, queue or site adapter: threads load this module.
 */
export function analysePage(input: PageInput, extract: FieldExtractor): PageAnalysis {
  const body = Buffer.isBuffer(input.body)
    ? input.body
    : Buffer.from(input.body.buffer, input.body.byteOffset, input.body.byteLength);
  const sha256 = createHash('sha256').update(body).digest('hex');
  const html =
    input.contentType === LISTING_CONTENT_TYPE ? undefined : decodeBody(body, input.contentType);
  // Markup-only changes (tokens, build hashes) keep the visible text and need no extraction.
  const pageText = html === undefined ? null : textSha256(html);
  const { previous } = input;
  if (
    previous !== null &&
    (sha256 === previous.bodySha256 || (pageText !== null && pageText === previous.textSha256))
  ) {
    return { sha256, textSha256: pageText, unchanged: true };
  }
  try {
    const fields = extract(input, body, html);
    return { sha256, textSha256: pageText, unchanged: false, fields };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { sha256, textSha256: pageText, unchanged: false, extractionError: message };
  }
}
