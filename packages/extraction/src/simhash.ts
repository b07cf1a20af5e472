import { createHash } from 'node:crypto';

/**
 * Text fingerprints.
 *
 * - `textSha256` of a page's visible words is exact: a page whose raw bytes changed only in
 *   markup, scripts, styles or whitespace (a CSRF token, a build hash) keeps it and is skipped,
 *   while a one-word edit (a title, a salary) changes it and is re-extracted.
 * - `simhash` (Charikar) is stable under small edits: it finds near-duplicates (the same posting
 *   reposted under another URL), where an exact hash would not. Postings store the SimHash of
 *   their description (`textSimhash`), not of the page, so site chrome does not make every
 *   posting of a site look alike.
 */

/** What readers never see: script-like elements with their content, comments, tags, entities. */
const INVISIBLE =
  /<(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>|<!--[\s\S]*?-->|<[^>]*>|&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);/gi;
/**
 * Runs of ASCII letters and digits and non-ASCII characters outside General Punctuation
 * (U+2000–U+206F: dashes, quotes, ellipses, which hold no letter or digit). A plain character
 * class matches several times faster than Unicode properties; the other non-ASCII characters
 * that are neither letters nor digits (€, ©, °, emoji…) are turned into spaces first, so the
 * runs are exactly the words: maximal runs of Unicode letters and digits (\p{L}\p{N}).
 */
const CANDIDATE = /[a-z0-9\u0080-\u1fff\u2070-\uffff]+/g;
const WORD_CHARACTER = /^[\p{L}\p{N}]$/u;

/** The page's visible words, lower-cased, in order. */
export function pageTokens(html: string): string[] {
  return textTokens(html.replace(INVISIBLE, ' '));
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
  return seen === undefined ? [] : [...seen].filter((char) => !WORD_CHARACTER.test(char));
}

/** The words of a plain text, lower-cased, in order. */
export function textTokens(text: string): string[] {
  return wordText(text).match(CANDIDATE) ?? [];
}

/** murmur3's finaliser: spreads a combined pair of word hashes over all 32 bits. */
function mix32(value: number): number {
  let h = value;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * SimHash votes, tallied per (byte position, byte value) and only spread over the 64 bits at
 * the end: 8 increments per feature instead of 64.
 */
class SimhashTally {
  /**
   * One tally for every SimHash of the process, cleared for each: hashing is synchronous, and a
   * typed array of this size per call lives outside the heap (8 KB allocated, zeroed and
   * finalised per posting).
   */
  private static readonly shared = new Int32Array(8 * 256);
  private readonly counts = SimhashTally.shared.fill(0);

  /** One feature: the two 32-bit halves of its 64-bit hash. */
  add(h: number, l: number): void {
    const counts = this.counts;
    counts[h & 0xff]! += 1;
    counts[256 + ((h >>> 8) & 0xff)]! += 1;
    counts[512 + ((h >>> 16) & 0xff)]! += 1;
    counts[768 + (h >>> 24)]! += 1;
    counts[1024 + (l & 0xff)]! += 1;
    counts[1280 + ((l >>> 8) & 0xff)]! += 1;
    counts[1536 + ((l >>> 16) & 0xff)]! += 1;
    counts[1792 + (l >>> 24)]! += 1;
  }

  /**
   * 16 hex digits; a bit is set when more features have it set than clear. Per byte position,
   * one pass over its 256 counts sums those of the values with each bit set.
   */
  digest(): string {
    const counts = this.counts;
    const halves = [0, 0];
    const ones = new Int32Array(8);
    for (let position = 0; position < 8; position += 1) {
      ones.fill(0);
      let total = 0;
      for (let value = 0, index = position * 256; value < 256; value += 1, index += 1) {
        const count = counts[index]!;
        if (count === 0) continue;
        total += count;
        for (let bits = value, bit = 0; bits !== 0; bits >>>= 1, bit += 1)
          if (bits & 1) ones[bit]! += count;
      }
      for (let bit = 0; bit < 8; bit += 1) {
        if (2 * ones[bit]! > total) halves[position >> 2]! |= 1 << ((position & 3) * 8 + bit);
      }
    }
    return (
      (halves[0]! >>> 0).toString(16).padStart(8, '0') +
      (halves[1]! >>> 0).toString(16).padStart(8, '0')
    );
  }
}

/**
 * Word bigrams as SimHash features. A word hashes to two independent 32-bit FNV-1a hashes (the
 * halves of its 64-bit feature hash); a bigram mixes its two words' hashes; a single trailing
 * word is a feature of its own, as in a one-word text. Each bigram occurrence votes once, so a
 * repeated bigram weighs as often as it occurs.
 */
class BigramFeatures {
  private readonly tally = new SimhashTally();
  private words = 0;
  private previousHigh = 0;
  private previousLow = 0;

  word(high: number, low: number): void {
    if (this.words > 0) {
      this.tally.add(
        mix32(this.previousHigh ^ Math.imul(high, 0x9e3779b1)),
        mix32(this.previousLow ^ Math.imul(low, 0x85ebca77)),
      );
    }
    this.words += 1;
    this.previousHigh = high;
    this.previousLow = low;
  }

  digest(): string {
    if (this.words > 0) this.tally.add(this.previousHigh >>> 0, this.previousLow >>> 0);
    return this.tally.digest();
  }
}

const FNV_OFFSET_HIGH = 0xcbf29ce4;
const FNV_OFFSET_LOW = 0x84222325;
const FNV_PRIME = 0x01000193;

/** SimHash (Charikar) over word bigrams, as 16 hex digits; an empty text hashes to all zeros. */
export function simhash(tokens: readonly string[]): string {
  const features = new BigramFeatures();
  for (const word of tokens) {
    let h = FNV_OFFSET_HIGH;
    let l = FNV_OFFSET_LOW;
    for (let offset = 0; offset < word.length; offset += 1) {
      const code = word.charCodeAt(offset);
      h = Math.imul(h ^ code, FNV_PRIME);
      l = Math.imul(l ^ ((code * 31) & 0xffff), FNV_PRIME);
    }
    features.word(h, l);
  }
  return features.digest();
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
    known = WORD_CHARACTER.test(String.fromCodePoint(codePoint));
    if (wordCodePoints.size < 65_536) wordCodePoints.set(codePoint, known);
  }
  return known;
}

/**
 * For a non-ASCII code unit at `offset` of a lower-cased text: how many code units make one word
 * character (1, or 2 for a letter outside the BMP), or 0 (-2 outside the BMP) when that
 * character separates words. The callers' loops test ASCII themselves, inline. The same partition
 * as `wordText` followed by `CANDIDATE`, for one character at a time.
 */
function wordUnitsAt(text: string, offset: number, code: number): number {
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

/**
 * SimHash of a posting's own text (its description): near-duplicates are the same posting
 * under another URL or site, which share that text but not the page around it. Equal to
 * `simhash(textTokens(text))`, hashing the words in one scan instead of splitting them out.
 */
export function textSimhash(text: string): string {
  const lower = text.toLowerCase();
  const features = new BigramFeatures();
  let inWord = false;
  let h = 0;
  let l = 0;
  for (let offset = 0; offset < lower.length; offset += 1) {
    const code = lower.charCodeAt(offset);
    if (code < 0x80) {
      if ((code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39)) {
        if (!inWord) {
          inWord = true;
          h = FNV_OFFSET_HIGH;
          l = FNV_OFFSET_LOW;
        }
        h = Math.imul(h ^ code, FNV_PRIME);
        l = Math.imul(l ^ ((code * 31) & 0xffff), FNV_PRIME);
      } else if (inWord) {
        inWord = false;
        features.word(h, l);
      }
      continue;
    }
    const units = wordUnitsAt(lower, offset, code);
    if (units <= 0) {
      if (inWord) {
        inWord = false;
        features.word(h, l);
      }
      if (units < 0) offset += 1; // a separator outside the BMP spans two units
      continue;
    }
    if (!inWord) {
      inWord = true;
      h = FNV_OFFSET_HIGH;
      l = FNV_OFFSET_LOW;
    }
    for (let unit = 0; unit < units; unit += 1) {
      const value = lower.charCodeAt(offset + unit);
      h = Math.imul(h ^ value, FNV_PRIME);
      l = Math.imul(l ^ ((value * 31) & 0xffff), FNV_PRIME);
    }
    offset += units - 1;
  }
  if (inWord) features.word(h, l);
  return features.digest();
}

export function pageSimhash(html: string): string {
  return textSimhash(html.replace(INVISIBLE, ' '));
}

const SCRIPT_LIKE = ['script', 'style', 'noscript', 'template'] as const;

/** Whether `text` has `name` (lower-case ASCII) at `offset`, in any case. */
function hasNameAt(text: string, offset: number, name: string): boolean {
  for (let index = 0; index < name.length; index += 1) {
    if ((text.charCodeAt(offset + index) | 0x20) !== name.charCodeAt(index)) return false;
  }
  return true;
}

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

/**
 * Where the `INVISIBLE` match starting at `start` (a `<` or `&`) ends, or -1 when none starts
 * there: the regex's alternatives, tried in its order.
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

/** Lower-case forms of the non-ASCII characters pages use, cached (up to a bound). */
const lowerCases = new Map<number, string>();
function lowerCaseOf(codePoint: number): string {
  let lower = lowerCases.get(codePoint);
  if (lower === undefined) {
    lower = String.fromCodePoint(codePoint).toLowerCase();
    if (lowerCases.size < 65_536) lowerCases.set(codePoint, lower);
  }
  return lower;
}

/** Writes one word character's UTF-8 bytes (1 or 2 UTF-16 units at `offset`) at `length`. */
function writeUtf8(
  out: Buffer,
  length: number,
  text: string,
  offset: number,
  units: number,
): number {
  const code = text.charCodeAt(offset);
  if (code < 0x80) {
    out[length++] = code;
  } else if (units === 2) {
    const codePoint = (code - 0xd800) * 0x400 + (text.charCodeAt(offset + 1) - 0xdc00) + 0x10000;
    out[length++] = 0xf0 | (codePoint >> 18);
    out[length++] = 0x80 | ((codePoint >> 12) & 0x3f);
    out[length++] = 0x80 | ((codePoint >> 6) & 0x3f);
    out[length++] = 0x80 | (codePoint & 0x3f);
  } else if (code < 0x800) {
    out[length++] = 0xc0 | (code >> 6);
    out[length++] = 0x80 | (code & 0x3f);
  } else {
    out[length++] = 0xe0 | (code >> 12);
    out[length++] = 0x80 | ((code >> 6) & 0x3f);
    out[length++] = 0x80 | (code & 0x3f);
  }
  return length;
}

/** Where the next word byte goes, and whether a separator is owed before it. */
interface WordCursor {
  length: number;
  separated: boolean;
}

/** Appends the words of an already lower-cased text at the cursor. */
function writeLowerCaseWords(text: string, out: Buffer, cursor: WordCursor): void {
  let { length, separated } = cursor;
  for (let offset = 0; offset < text.length; offset += 1) {
    const code = text.charCodeAt(offset);
    const units =
      code < 0x80
        ? (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39)
          ? 1
          : 0
        : wordUnitsAt(text, offset, code);
    if (units <= 0) {
      separated = length > 0;
      if (units < 0) offset += 1; // a separator outside the BMP spans two units
      continue;
    }
    if (separated) {
      out[length++] = 0x20;
      separated = false;
    }
    length = writeUtf8(out, length, text, offset, units);
    offset += units - 1;
  }
  cursor.length = length;
  cursor.separated = separated;
}

/**
 * `textSha256`'s words in one scan of the page, with no intermediate strings: what `INVISIBLE`
 * matches is skipped, and each visible character is lower-cased on its own (ASCII in place, the
 * rest through a cache). Writes them to `out` and returns their length, or -1 for a page
 * whose text has a capital sigma: its lower case depends on where it stands in its word, and the
 * general path lower-cases the whole text.
 */
function visibleWords(html: string, out: Buffer): number {
  let length = 0;
  let separated = false;
  let cursor: WordCursor | undefined;
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
    if (code >= 0x2000 && code < 0x2070) {
      separated = length > 0;
      continue;
    }
    if (code === 0x3a3) return -1;
    let codePoint = code;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = html.charCodeAt(offset);
      if (next >= 0xdc00 && next <= 0xdfff) {
        codePoint = (code - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
        offset += 1;
      }
    }
    cursor ??= { length, separated };
    cursor.length = length;
    cursor.separated = separated;
    writeLowerCaseWords(lowerCaseOf(codePoint), out, cursor);
    ({ length, separated } = cursor);
  }
  return length;
}

/** Reused by `textSha256` for pages' words: grown on demand up to 1 MiB, kept for the next page. */
let wordBytes = Buffer.allocUnsafe(64 * 1024);
const MAX_KEPT_WORD_BYTES = 1024 * 1024;

/** A buffer of at least `size` bytes: the reused one, or for a huge page one of its own. */
function scratch(size: number): Buffer {
  if (size <= wordBytes.length) return wordBytes;
  if (size > MAX_KEPT_WORD_BYTES) return Buffer.allocUnsafe(size);
  wordBytes = Buffer.allocUnsafe(size);
  return wordBytes;
}

/**
 * sha256 of a page's visible words joined by single spaces: equal for pages that differ only
 * outside their text. The words are written as UTF-8 straight into a reused buffer in one scan
 * of the lower-cased text (a regex collapse of what lies between them cost twice as much).
 */
export function textSha256(html: string): string {
  // A UTF-16 unit gives at most 3 UTF-8 bytes (İ lower-cases to two units, 3 bytes), plus a
  // separator before it.
  const out = scratch(html.length * 4);
  const scanned = visibleWords(html, out);
  if (scanned >= 0) return createHash('sha256').update(out.subarray(0, scanned)).digest('hex');
  const cursor: WordCursor = { length: 0, separated: false };
  writeLowerCaseWords(html.replace(INVISIBLE, ' ').toLowerCase(), out, cursor);
  return createHash('sha256').update(out.subarray(0, cursor.length)).digest('hex');
}

/** Number of differing bits between two SimHashes. */
export function hammingDistance(a: string, b: string): number {
  let distance = 0;
  for (let offset = 0; offset < 16; offset += 8) {
    let x =
      (parseInt(a.slice(offset, offset + 8), 16) ^ parseInt(b.slice(offset, offset + 8), 16)) >>> 0;
    while (x !== 0) {
      x &= x - 1;
      distance += 1;
    }
  }
  return distance;
}
