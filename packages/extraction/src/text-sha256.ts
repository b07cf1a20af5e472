import { createHash } from 'node:crypto';
import { InvisibleMarkup, isWordCharacter, pageTokens } from './words.js';

/**
 * sha256 of a page's visible words, lower-cased and joined by single spaces: equal for pages
 * that differ only outside their text. A page whose raw bytes changed only in markup, scripts,
 * styles or whitespace (a CSRF token, a build hash) keeps it and is skipped; a one-word edit (a
 * title, a salary) changes it and is re-extracted.
 *
 * Every fetched page is hashed, so the words are found in one scan of the page instead of by
 * `pageTokens`' regular expressions, and written as UTF-8 straight into a reused buffer, with no
 * intermediate string: about half the time on 30 KB career-site pages. The tests in
 * simhash.test.ts hold the two equal.
 */
export function textSha256(html: string): string {
  const words = visibleWordsUtf8(html) ?? pageTokens(html).join(' ');
  return createHash('sha256').update(words).digest('hex');
}

/**
 * `pageTokens(html).join(' ')` as UTF-8, in a view of the reused buffer; or null for a page
 * whose text has a capital sigma (Σ): its lower case depends on where it stands in its word,
 * which only lower-casing the whole text gets right. What `visibleText` drops is skipped
 * (`InvisibleMarkup`, in one pass however much of the page is unclosed markup) and each visible
 * character is lower-cased on its own: ASCII in place, the rest through a cache.
 */
function visibleWordsUtf8(html: string): Uint8Array | null {
  // A UTF-16 unit gives at most 3 UTF-8 bytes (İ lower-cases to two units, 3 bytes), plus a
  // separator before it.
  const out = scratch(html.length * 4);
  let length = 0;
  let separated = false;
  const markup = new InvisibleMarkup(html);
  for (let offset = 0; offset < html.length;) {
    const code = html.charCodeAt(offset);
    if (code === 0x3c || code === 0x26) {
      const end = markup.endAt(offset);
      separated = length > 0;
      offset = end === -1 ? offset + 1 : end;
      continue;
    }
    offset += 1;
    if (code < 0x80) {
      const lower = code >= 0x41 && code <= 0x5a ? code | 0x20 : code;
      if ((lower >= 0x61 && lower <= 0x7a) || (lower >= 0x30 && lower <= 0x39)) {
        if (separated) {
          out[length++] = 0x20;
          separated = false;
        }
        out[length++] = lower;
      } else {
        separated = length > 0;
      }
      continue;
    }
    if (code === 0x3a3) return null;
    let codePoint = code;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = html.charCodeAt(offset);
      if (next >= 0xdc00 && next <= 0xdfff) {
        codePoint = (code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
        offset += 1;
      }
    }
    for (const byte of lowerCaseWordBytes(codePoint)) {
      if (byte === 0x20) {
        separated = length > 0;
        continue;
      }
      if (separated) {
        out[length++] = 0x20;
        separated = false;
      }
      out[length++] = byte;
    }
  }
  return out.subarray(0, length);
}

const utf8 = new TextEncoder();

/**
 * A non-ASCII character lower-cased, as UTF-8 with a space for each resulting character that is
 * no letter or digit (a dash is a space; İ is "i" and a space for its combining dot). Pages use
 * a handful of distinct non-ASCII characters, so the answers are cached (up to a bound, for
 * pages that use thousands).
 */
const lowerCaseWordBytesCache = new Map<number, Uint8Array>();
function lowerCaseWordBytes(codePoint: number): Uint8Array {
  let bytes = lowerCaseWordBytesCache.get(codePoint);
  if (bytes === undefined) {
    const lower = String.fromCodePoint(codePoint).toLowerCase();
    bytes = utf8.encode(Array.from(lower, (char) => (isWordCharacter(char) ? char : ' ')).join(''));
    if (lowerCaseWordBytesCache.size < 65_536) lowerCaseWordBytesCache.set(codePoint, bytes);
  }
  return bytes;
}

/** Reused for pages' words: grown on demand up to 1 MiB, kept for the next page. */
let wordBytes = Buffer.allocUnsafe(64 * 1024);
const MAX_KEPT_WORD_BYTES = 1024 * 1024;

/** A buffer of at least `size` bytes: the reused one, or for a huge page one of its own. */
function scratch(size: number): Buffer {
  if (size <= wordBytes.length) return wordBytes;
  if (size > MAX_KEPT_WORD_BYTES) return Buffer.allocUnsafe(size);
  wordBytes = Buffer.allocUnsafe(size);
  return wordBytes;
}
