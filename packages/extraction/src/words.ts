/**
 * What the fingerprints (`textSha256`, `textSimhash`) count as words: maximal runs of Unicode
 * letters and digits (\p{L}\p{N}) in lower-cased text; for a page, in what a reader sees of it.
 */

/** What readers never see: script-like elements with their content, comments, tags, entities. */
const INVISIBLE =
  /<(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>|<!--[\s\S]*?-->|<[^>]*>|&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);/gi;
/**
 * Runs of ASCII letters and digits and non-ASCII characters outside General Punctuation
 * (U+2000–U+206F: dashes, quotes, ellipses, which hold no letter or digit). A plain character
 * class matches several times faster than Unicode properties; the other non-ASCII characters
 * that are neither letters nor digits (€, ©, °, emoji…) are turned into spaces first, so the
 * runs are exactly the words.
 */
const CANDIDATE = /[a-z0-9\u0080-\u1fff\u2070-\uffff]+/g;
const WORD_CHARACTER = /^[\p{L}\p{N}]$/u;

/** A page's text as a reader sees it, with a space where markup was. */
export function visibleText(html: string): string {
  return html.replace(INVISIBLE, ' ');
}

/** The page's visible words, lower-cased, in order. */
export function pageTokens(html: string): string[] {
  return textTokens(visibleText(html));
}

/** The words of a plain text, lower-cased, in order. */
export function textTokens(text: string): string[] {
  return wordText(text).match(CANDIDATE) ?? [];
}

/**
 * Lower-cased text in which every character that is not a letter or digit lies outside
 * `CANDIDATE`, so that the runs `CANDIDATE` matches are exactly the words.
 */
function wordText(text: string): string {
  const lower = text.toLowerCase();
  const separators = nonWordCharacters(lower);
  if (separators.length === 0) return lower;
  return lower.replace(new RegExp(`[${separators.join('')}]`, 'gu'), ' ');
}

/** The distinct characters in `CANDIDATE`'s class that are neither letters nor digits. */
function nonWordCharacters(text: string): string[] {
  let seen: Set<string> | undefined;
  for (let offset = 0; offset < text.length; offset += 1) {
    const code = text.charCodeAt(offset);
    if (code < 0x80 || (code >= 0x2000 && code < 0x2070)) continue;
    const char = String.fromCodePoint(text.codePointAt(offset)!);
    offset += char.length - 1;
    (seen ??= new Set()).add(char);
  }
  return seen === undefined ? [] : [...seen].filter((char) => !isWordCharacter(char));
}

/** Whether one character (one code point) is a letter or digit. */
export function isWordCharacter(char: string): boolean {
  return WORD_CHARACTER.test(char);
}

/**
 * Whether a code point outside ASCII and General Punctuation is a letter or digit. Pages use a
 * handful of distinct non-ASCII characters, so the answers are cached (up to a bound, for pages
 * that use thousands).
 */
const wordCodePoints = new Map<number, boolean>();
function isWordCodePoint(codePoint: number): boolean {
  let known = wordCodePoints.get(codePoint);
  if (known === undefined) {
    known = isWordCharacter(String.fromCodePoint(codePoint));
    if (wordCodePoints.size < 65_536) wordCodePoints.set(codePoint, known);
  }
  return known;
}

/**
 * For a non-ASCII code unit at `offset` of a lower-cased text: how many code units make one word
 * character (1, or 2 for a letter outside the BMP), or 0 (-2 outside the BMP) when that
 * character separates words. Callers test ASCII themselves, inline. The same partition as
 * `textTokens`, for one character at a time.
 */
export function wordUnitsAt(text: string, offset: number, code: number): number {
  if (code >= 0x2000 && code < 0x2070) return 0;
  if (code >= 0xd800 && code <= 0xdfff) {
    const next = text.charCodeAt(offset + 1);
    if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      const codePoint = (code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
      return isWordCodePoint(codePoint) ? 2 : -2;
    }
    // A lone surrogate (never in decoded bytes; a JSON escape can make one) is no letter.
    return 0;
  }
  return isWordCodePoint(code) ? 1 : 0;
}
