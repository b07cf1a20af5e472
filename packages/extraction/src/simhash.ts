import { createHash } from 'node:crypto';

/**
 * Fingerprints of a page's visible text. A posting page whose raw bytes changed only in markup,
 * scripts, styles or whitespace (a CSRF token, a build hash, a reordered attribute) keeps both.
 *
 * - `textSha256` is exact: change detection skips a page only when it is unchanged, because a
 *   one-word edit (a title, a salary) must be re-extracted.
 * - `simhash` (Charikar) is stable under small edits: it finds near-duplicates (the same posting
 *   reposted under another URL), where an exact hash would not.
 */

const SCRIPT_OR_STYLE = /<(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
const COMMENT = /<!--[\s\S]*?-->/g;
const TAG = /<[^>]*>/g;
const ENTITY = /&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);/gi;
const TOKEN = /[\p{L}\p{N}]+/gu;

/** The page's visible words, lower-cased, in order. */
export function pageTokens(html: string): string[] {
  const text = html
    .replace(SCRIPT_OR_STYLE, ' ')
    .replace(COMMENT, ' ')
    .replace(TAG, ' ')
    .replace(ENTITY, ' ');
  return text.toLowerCase().match(TOKEN) ?? [];
}

/** 64-bit FNV-1a of a string as two 32-bit halves (no BigInt on the hot path). */
function fnv1a64(value: string): [number, number] {
  // Two independent 32-bit FNV-1a streams with different offsets stand in for one 64-bit hash.
  let high = 0xcbf29ce4;
  let low = 0x84222325;
  for (let index = 0; index < value.length; index += 1) {
    const code = value.charCodeAt(index);
    high = Math.imul(high ^ code, 0x01000193) >>> 0;
    low = Math.imul(low ^ ((code * 31) & 0xffff), 0x01000193) >>> 0;
  }
  return [high, low];
}

/** SimHash over word bigrams, as 16 hex digits. An empty text hashes to all zeros. */
export function simhash(tokens: readonly string[]): string {
  const weights = new Map<string, number>();
  for (let index = 0; index < tokens.length; index += 1) {
    const feature =
      index + 1 < tokens.length ? `${tokens[index]} ${tokens[index + 1]}` : tokens[index]!;
    weights.set(feature, (weights.get(feature) ?? 0) + 1);
  }
  const vector = new Float64Array(64);
  for (const [feature, weight] of weights) {
    const [high, low] = fnv1a64(feature);
    for (let bit = 0; bit < 32; bit += 1) {
      vector[bit]! += (high >>> bit) & 1 ? weight : -weight;
      vector[bit + 32]! += (low >>> bit) & 1 ? weight : -weight;
    }
  }
  let high = 0;
  let low = 0;
  for (let bit = 0; bit < 32; bit += 1) {
    if (vector[bit]! > 0) high |= 1 << bit;
    if (vector[bit + 32]! > 0) low |= 1 << bit;
  }
  return (high >>> 0).toString(16).padStart(8, '0') + (low >>> 0).toString(16).padStart(8, '0');
}

export function pageSimhash(html: string): string {
  return simhash(pageTokens(html));
}

/** sha256 of the visible words: equal for pages that differ only outside their text. */
export function textSha256(html: string): string {
  return createHash('sha256').update(pageTokens(html).join(' ')).digest('hex');
}

/** Both fingerprints from one tokenisation. */
export function pageFingerprints(html: string): { textSha256: string; simhash: string } {
  const tokens = pageTokens(html);
  return {
    textSha256: createHash('sha256').update(tokens.join(' ')).digest('hex'),
    simhash: simhash(tokens),
  };
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
