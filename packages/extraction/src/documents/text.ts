/**
 * Plain text and HTML documents: bytes to text with the crawler's one decoder
 * (`@gleaner/http/charset`, which imports nothing, so parser processes load it alone), and HTML
 * through the package's own sanitiser and text walk.
 */
import { decodeBody, detectCharset } from '@gleaner/http/charset';
import { htmlToText } from '../html-text.js';
import { readPageMeta } from '../page-meta.js';
import { sanitiseHtml } from '../sanitise-html.js';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false; // not UTF-8: the caller falls back to a single-byte encoding
  }
}

/**
 * Bytes to text: a byte-order mark (UTF-8, UTF-16LE/BE) wins; then UTF-8 if the bytes are valid
 * UTF-8 (a charset label saying otherwise is usually a server default, and ASCII reads the same
 * either way); then a charset declared by the media type or, for HTML, a `<meta>`; then
 * windows-1252, what a desktop editor saved a "latin-1" file as. decodeBody maps
 * windows-1252's 0x80–0x9F (€, curly quotes, dashes) that Node 20's decoder gets wrong, and
 * drops NULs.
 */
export function decodeDocumentText(bytes: Uint8Array, mediaType: string | undefined): string {
  const detected = detectCharset(bytes, mediaType);
  if (detected.source === 'bom') return decodeBody(bytes, mediaType);
  if (isValidUtf8(bytes)) return decodeBody(bytes, 'text/plain; charset=utf-8');
  if (detected.source !== 'default') return decodeBody(bytes, mediaType);
  return decodeBody(bytes, 'text/plain; charset=windows-1252');
}

/** Line breaks normalised, trailing spaces trimmed, at most one blank line in a row. */
export function tidyText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\u00a0]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function extractPlainText(bytes: Uint8Array, mediaType: string | undefined) {
  return { text: tidyText(decodeDocumentText(bytes, mediaType)), title: null, pageCount: null };
}

/**
 * The visible text of an HTML document: sanitised first (scripts, styles, frames and their
 * contents go, however the markup hides them), then one line per block. The title is the
 * `<title>`, else the first `<h1>`.
 */
export function extractHtml(bytes: Uint8Array, mediaType: string | undefined) {
  const html = decodeDocumentText(bytes, mediaType ?? 'text/html');
  const meta = readPageMeta(html);
  const title = meta.title ?? meta.h1[0] ?? null;
  return { text: htmlToText(sanitiseHtml(html)) ?? '', title, pageCount: null };
}
