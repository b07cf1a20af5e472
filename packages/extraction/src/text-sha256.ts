import { createHash } from 'node:crypto';
import { isWordCharacter, pageTokens } from './words.js';

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
 * which only lower-casing the whole text gets right. What `visibleText`'s pattern matches is
 * skipped (`invisibleEnd`) and each visible character is lower-cased on its own: ASCII in place,
 * the rest through a cache.
 */
function visibleWordsUtf8(html: string): Uint8Array | null {
  // A UTF-16 unit gives at most 3 UTF-8 bytes (İ lower-cases to two units, 3 bytes), plus a
  // separator before it.
  const out = scratch(html.length * 4);
  let length = 0;
  let separated = false;
  for (let offset = 0; offset < html.length;) {
    const code = html.charCodeAt(offset);
    if (code === 0x3c || code === 0x26) {
      const end = invisibleEnd(html, offset);
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

const SCRIPT_LIKE = ['script', 'style', 'noscript', 'template'] as const;

/**
 * Where the match of `visibleText`'s pattern starting at `start` (a `<` or `&`) ends, or -1 when
 * none starts there: the pattern's alternatives, tried in its order.
 */
function invisibleEnd(html: string, start: number): number {
  if (html.charCodeAt(start) === 0x26) {
    const next = html.charCodeAt(start + 1);
    let end = start + 2;
    if (next === 0x23) {
      while (html.charCodeAt(end) >= 0x30 && html.charCodeAt(end) <= 0x39) end += 1;
      if (end > start + 2 && html.charCodeAt(end) === 0x3b) return end + 1;
      if ((html.charCodeAt(start + 2) | 0x20) !== 0x78) return -1;
      end = start + 3;
      for (;;) {
        const code = html.charCodeAt(end);
        if (!((code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x66)))
          break;
        end += 1;
      }
      return end > start + 3 && html.charCodeAt(end) === 0x3b ? end + 1 : -1;
    }
    if ((next | 0x20) < 0x61 || (next | 0x20) > 0x7a) return -1;
    for (;;) {
      const code = html.charCodeAt(end);
      if (!((code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a)))
        break;
      end += 1;
    }
    return html.charCodeAt(end) === 0x3b ? end + 1 : -1;
  }
  for (const name of SCRIPT_LIKE) {
    const afterName = start + 1 + name.length;
    if (!hasNameAt(html, start + 1, name) || isAsciiWordCharacter(html.charCodeAt(afterName)))
      continue;
    const opened = html.indexOf('>', afterName);
    if (opened === -1) break;
    for (let from = opened + 1; ;) {
      const closing = html.indexOf('</', from);
      if (closing === -1) break;
      from = closing + 1;
      if (!hasNameAt(html, closing + 2, name)) continue;
      let end = closing + 2 + name.length;
      while (isJsWhitespace(html.charCodeAt(end))) end += 1;
      if (html.charCodeAt(end) === 0x3e) return end + 1;
    }
    break;
  }
  if (html.startsWith('<!--', start)) {
    const end = html.indexOf('-->', start + 4);
    if (end !== -1) return end + 3;
  }
  const end = html.indexOf('>', start + 1);
  return end === -1 ? -1 : end + 1;
}

/** Whether `text` has `name` (lower-case ASCII) at `offset`, in any case. */
function hasNameAt(text: string, offset: number, name: string): boolean {
  for (let index = 0; index < name.length; index += 1) {
    if ((text.charCodeAt(offset + index) | 0x20) !== name.charCodeAt(index)) return false;
  }
  return true;
}

/** What `\w` matches. */
function isAsciiWordCharacter(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) ||
    code === 0x5f
  );
}

/** What `\s` matches in a JavaScript regular expression. */
function isJsWhitespace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
