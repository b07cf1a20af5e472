import { visibleText, wordUnitsAt } from './words.js';

/**
 * SimHash (Charikar) of a text's words: stable under small edits, it finds near-duplicates (the
 * same posting reposted under another URL), where an exact hash (`textSha256`) would not.
 * Postings store the SimHash of their description (`textSimhash`), not of the page, so site
 * chrome does not make every posting of a site look alike.
 */

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
  return textSimhash(visibleText(html));
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
