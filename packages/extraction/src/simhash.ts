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
const NON_ASCII = /[\u0080-\u1fff\u2070-\u{10ffff}]/gu;
const WORD_CHARACTER = /^[\p{L}\p{N}]$/u;

/** The page's visible words, lower-cased, in order. */
export function pageTokens(html: string): string[] {
  return textTokens(html.replace(INVISIBLE, ' '));
}

/** Two independent 32-bit FNV-1a hashes of a word: the halves of its 64-bit feature hash. */
function wordHashes(words: readonly string[]): { high: Uint32Array; low: Uint32Array } {
  const high = new Uint32Array(words.length);
  const low = new Uint32Array(words.length);
  for (let index = 0; index < words.length; index += 1) {
    const word = words[index]!;
    let h = 0xcbf29ce4;
    let l = 0x84222325;
    for (let offset = 0; offset < word.length; offset += 1) {
      const code = word.charCodeAt(offset);
      h = Math.imul(h ^ code, 0x01000193);
      l = Math.imul(l ^ ((code * 31) & 0xffff), 0x01000193);
    }
    high[index] = h;
    low[index] = l;
  }
  return { high, low };
}

/** murmur3's finaliser: spreads a combined pair of word hashes over all 32 bits. */
function mix32(value: number): number {
  let h = value;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * SimHash (Charikar) over word bigrams, as 16 hex digits; an empty text hashes to all zeros.
 * Each bigram occurrence votes once, so a repeated bigram weighs as often as it occurs.
 */
export function simhash(tokens: readonly string[]): string {
  const { high, low } = wordHashes(tokens);
  // Votes are tallied per (byte position, byte value) and only then spread over the 64 bits:
  // 8 increments per feature instead of 64.
  const tally = new Int32Array(8 * 256);
  for (let index = 0; index < tokens.length; index += 1) {
    const last = index + 1 === tokens.length;
    // A single trailing word is a feature of its own, as in a one-word text.
    const h = last ? high[index]! : mix32(high[index]! ^ Math.imul(high[index + 1]!, 0x9e3779b1));
    const l = last ? low[index]! : mix32(low[index]! ^ Math.imul(low[index + 1]!, 0x85ebca77));
    tally[h & 0xff]! += 1;
    tally[256 + ((h >>> 8) & 0xff)]! += 1;
    tally[512 + ((h >>> 16) & 0xff)]! += 1;
    tally[768 + (h >>> 24)]! += 1;
    tally[1024 + (l & 0xff)]! += 1;
    tally[1280 + ((l >>> 8) & 0xff)]! += 1;
    tally[1536 + ((l >>> 16) & 0xff)]! += 1;
    tally[1792 + (l >>> 24)]! += 1;
  }
  const halves = [0, 0];
  for (let position = 0; position < 8; position += 1) {
    for (let bit = 0; bit < 8; bit += 1) {
      // A bit is set when more features have it set than clear.
      let vote = 0;
      for (let value = 0; value < 256; value += 1) {
        const count = tally[position * 256 + value]!;
        vote += (value >>> bit) & 1 ? count : -count;
      }
      if (vote > 0) halves[position >> 2]! |= 1 << ((position & 3) * 8 + bit);
    }
  }
  return (
    (halves[0]! >>> 0).toString(16).padStart(8, '0') +
    (halves[1]! >>> 0).toString(16).padStart(8, '0')
  );
}

/** The words of a plain text, lower-cased, in order. */
export function textTokens(text: string): string[] {
  let lower = text.toLowerCase();
  const nonAscii = lower.match(NON_ASCII);
  if (nonAscii !== null) {
    const separators = [...new Set(nonAscii)].filter((char) => !WORD_CHARACTER.test(char));
    if (separators.length > 0)
      lower = lower.replace(new RegExp(`[${separators.join('')}]`, 'gu'), ' ');
  }
  return lower.match(CANDIDATE) ?? [];
}

/**
 * SimHash of a posting's own text (its description): near-duplicates are the same posting
 * under another URL or site, which share that text but not the page around it.
 */
export function textSimhash(text: string): string {
  return simhash(textTokens(text));
}

export function pageSimhash(html: string): string {
  return simhash(pageTokens(html));
}

/** sha256 of a page's visible words: equal for pages that differ only outside their text. */
export function textSha256(html: string): string {
  return createHash('sha256').update(pageTokens(html).join(' ')).digest('hex');
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
