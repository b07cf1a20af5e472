import { createHash } from 'node:crypto';
import type { ExtractedFields } from '@gleaner/db';
import { isClassifiedError, type RetryClass } from '@gleaner/errors';
import { htmlToText, textSha256, type SiteTemplate, type TemplateFit } from '@gleaner/extraction';
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
  /** The site's learned template (decision 0028), when it has one. */
  template?: SiteTemplate;
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
  /** How the page agreed with the site's template, when one was given. */
  templateFit?: TemplateFit;
}

/** A stored page read again: by the extract stage (its fields) and the LLM stage (also its text). */
export interface StoredPageInput {
  body: Uint8Array;
  contentType: string | null;
  siteKind: string;
  url: string;
  /** Also give the page's visible text: what the LLM stage extracts from. */
  wantsText: boolean;
  /** The site's learned template (decision 0028), when it has one. */
  template?: SiteTemplate;
}

/** What the extract and LLM stages make of a stored page. */
export interface PageReading {
  /** The extracted fields, when extraction succeeded. */
  fields?: ExtractedFields;
  /** The error extraction threw, as data: its code and retry class when it had them. */
  extractionError?: { message: string; code?: string; retryClass?: RetryClass };
  /** The page's visible text, when it was asked for. */
  text?: string;
  /** How the page agreed with the site's template, when one was given. */
  templateFit?: TemplateFit;
}

/**
 * Fields from a page: its HTML when it is one (undefined for an ATS payload), and its bytes; read
 * with the site's template when the input has one, telling `onTemplateFit` how the page agreed
 * with it (also when it then throws: a page that fits no more is how a redesign shows).
 */
export type FieldExtractor = (
  input: Pick<PageInput, 'contentType' | 'siteKind' | 'url' | 'template'>,
  body: Buffer,
  html: string | undefined,
  onTemplateFit?: (fit: TemplateFit) => void,
) => ExtractedFields;

function asBuffer(body: Uint8Array): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * Fingerprints a page, decides whether it changed and, when it did, extracts it with `extract`:
 * the CPU-bound part of a crawl. Pure and synchronous, so that it runs in the page analyser's
 * threads and on the event loop alike, with the same results. Imports nothing that loads a
 * database, queue or site adapter: threads load this module.
 */
export function analysePage(input: PageInput, extract: FieldExtractor): PageAnalysis {
  const body = asBuffer(input.body);
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
  let templateFit: TemplateFit | undefined;
  const fitOf = (fit: TemplateFit) => (templateFit = fit);
  try {
    const fields = extract(input, body, html, fitOf);
    return {
      sha256,
      textSha256: pageText,
      unchanged: false,
      fields,
      ...(templateFit && { templateFit }),
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      sha256,
      textSha256: pageText,
      unchanged: false,
      extractionError: message,
      ...(templateFit && { templateFit }),
    };
  }
}

/**
 * Reads a stored page again: its fields with `extract` and, when asked, its visible text. The
 * extract and LLM stages' share of a page's CPU, pure and synchronous like `analysePage`, so
 * that it runs in the analyser's threads under the job's deadline and the page's time budget.
 */
export function readPage(input: StoredPageInput, extract: FieldExtractor): PageReading {
  const body = asBuffer(input.body);
  const html =
    input.contentType === LISTING_CONTENT_TYPE ? undefined : decodeBody(body, input.contentType);
  const reading: PageReading = {};
  try {
    reading.fields = extract(input, body, html, (fit) => (reading.templateFit = fit));
  } catch (error) {
    reading.extractionError = isClassifiedError(error)
      ? { message: error.message, code: error.code, retryClass: error.retryClass }
      : { message: error instanceof Error ? error.message : String(error) };
  }
  // An ATS payload's text is its JSON decoded as a page, as the LLM stage always read it.
  if (input.wantsText) reading.text = htmlToText(html ?? decodeBody(body, input.contentType)) ?? '';
  return reading;
}
