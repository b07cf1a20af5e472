/**
 * DOCX text with mammoth, behind our own zip check (zip.ts): mammoth only ever sees a zip whose
 * every entry has been inflated and counted.
 *
 * External references: a DOCX can link an image (or anything) by URL or file path instead of
 * embedding it (`TargetMode="External"`). mammoth ≥ 1.11 refuses to read them unless
 * `externalFileAccess` is set, and `extractRawText` does not read images at all; it has no
 * network code. documents.test.ts checks both with a DOCX linking a canary URL and a local file.
 */
import mammoth from 'mammoth';
import { decodeEntities, normaliseWhitespace, withoutTags } from '../html-text.js';
import { DocumentExtractionError } from './errors.js';
import { inflateZipEntries, listZipEntries } from './zip.js';
import { tidyText } from './text.js';

const CORE_PROPERTIES = 'docProps/core.xml';
const APP_PROPERTIES = 'docProps/app.xml';
/** Properties parts are a few hundred bytes; more than this of one is not read for metadata. */
const MAX_PROPERTIES_BYTES = 256 * 1024;

export interface DocxText {
  text: string;
  title: string | null;
  pageCount: number | null;
}

/**
 * The text of the first element of a properties part whose opening tag `open` matches (a pattern
 * ending at the element's name) and `close` closes, as `open[^>]*>([\s\S]*?)close` would find
 * it. Only the first opening tag needs trying: a later one's content starts no earlier, so a `>`
 * or closing tag missing after the first is missing after it too (the one pattern retried from
 * every opening tag, quadratic in a part full of them).
 */
function xmlText(part: Uint8Array | undefined, open: RegExp, close: RegExp): string | null {
  if (part === undefined) return null;
  const xml = new TextDecoder('utf-8').decode(part);
  const opening = open.exec(xml);
  if (opening === null) return null;
  const contentStart = xml.indexOf('>', opening.index + opening[0].length) + 1;
  if (contentStart === 0) return null;
  close.lastIndex = contentStart;
  const closing = close.exec(xml);
  if (closing === null) return null;
  const value = normaliseWhitespace(
    decodeEntities(withoutTags(xml.slice(contentStart, closing.index), '')),
  );
  return value === '' ? null : value;
}

/**
 * Text, title (`dc:title` of `docProps/core.xml`) and page count (`<Pages>` of
 * `docProps/app.xml`, as Word last saved it: a DOCX has no pages of its own). Throws
 * `corruption` for a zip that is damaged, lacks `word/document.xml`, or inflates past
 * `maxDecompressedBytes` in total.
 */
export async function extractDocx(
  bytes: Uint8Array,
  maxDecompressedBytes: number,
): Promise<DocxText> {
  const entries = listZipEntries(bytes);
  if (!entries.some((entry) => entry.name === 'word/document.xml'))
    throw new DocumentExtractionError(
      'corruption',
      'the DOCX has no word/document.xml: it is another kind of zip, or damaged',
    );
  const parts = inflateZipEntries(bytes, entries, {
    maxInflatedBytes: maxDecompressedBytes,
    keep: new Set([CORE_PROPERTIES, APP_PROPERTIES]),
    maxKeptBytes: MAX_PROPERTIES_BYTES,
  });
  let raw: string;
  try {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    raw = (await mammoth.extractRawText({ buffer })).value;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new DocumentExtractionError('corruption', `the DOCX cannot be read: ${detail}`, {
      cause: error,
    });
  }
  const title = xmlText(parts.get(CORE_PROPERTIES), /<dc:title\b/, /<\/dc:title>/g);
  const pages = xmlText(parts.get(APP_PROPERTIES), /<(?:\w+:)?Pages\b/, /<\/(?:\w+:)?Pages>/g);
  const pageCount = pages !== null && /^\d{1,7}$/.test(pages) ? Number(pages) : null;
  return { text: tidyText(raw), title, pageCount };
}
