/**
 * What the fingerprints (`textSha256`, `textSimhash`) count as words: maximal runs of Unicode
 * letters and digits (\p{L}\p{N}) in lower-cased text; for a page, in what a reader sees of it.
 */

/**
 * Runs of ASCII letters and digits and non-ASCII characters outside General Punctuation
 * (U+2000–U+206F: dashes, quotes, ellipses, which hold no letter or digit). A plain character
 * class matches several times faster than Unicode properties; the other non-ASCII characters
 * that are neither letters nor digits (€, ©, °, emoji…) are turned into spaces first, so the
 * runs are exactly the words.
 */
const CANDIDATE = /[a-z0-9\u0080-\u1fff\u2070-\uffff]+/g;
const WORD_CHARACTER = /^[\p{L}\p{N}]$/u;

/**
 * A page's text as a reader sees it, with a space where markup was: script-like elements with
 * their content, comments, tags and character references (see `InvisibleMarkup`) go.
 */
export function visibleText(html: string): string {
  const markup = new InvisibleMarkup(html);
  let text = '';
  let copied = 0;
  // The next `<` and `&` at or after `from`, each searched for only once it has been passed: a
  // page without `&` must not be searched to its end for one at every `<`.
  let tag = -1;
  let reference = -1;
  for (let from = 0; ; ) {
    if (tag !== html.length && tag < from) tag = indexOrLength(html, '<', from);
    if (reference !== html.length && reference < from)
      reference = indexOrLength(html, '&', from);
    const start = Math.min(tag, reference);
    if (start === html.length) break;
    const end = markup.endAt(start);
    if (end === -1) {
      from = start + 1;
      continue;
    }
    text += `${html.slice(copied, start)} `;
    copied = end;
    from = end;
  }
  return copied === 0 ? html : text + html.slice(copied);
}

function indexOrLength(text: string, search: string, from: number): number {
  const index = text.indexOf(search, from);
  return index === -1 ? text.length : index;
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

// ---------------------------------------------------------------------------------------------
// Invisible markup

const SCRIPT_LIKE = ['script', 'style', 'noscript', 'template'] as const;

/**
 * What readers never see, in one page: script-like elements with their content, comments, tags
 * and character references, matched at a `<` or `&` as the pattern
 *
 *   <(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>|<!--[\s\S]*?-->|<[^>]*>|
 *   &(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);   (case-insensitive)
 *
 * would, alternatives tried in that order. The pattern itself takes quadratic time on a page of
 * unclosed markup (each `<` scans to the end for a `>` that never comes: 50 KB of `<meta ` took
 * 2 s, 4 MB would take hours). Here each terminator's absence is remembered: once no `>`, `-->`
 * or `</script>` follows an offset, none follows any later one, so the page is read in one pass.
 */
export class InvisibleMarkup {
  /** No `>` at or after this offset. */
  private noTagEndFrom = Number.POSITIVE_INFINITY;
  /** No `-->` at or after this offset. */
  private noCommentEndFrom = Number.POSITIVE_INFINITY;
  /** Per `SCRIPT_LIKE` name: no closing tag at or after this offset. */
  private readonly noClosingTagFrom = SCRIPT_LIKE.map(() => Number.POSITIVE_INFINITY);

  constructor(private readonly html: string) {}

  /** Where the markup starting at `start` (a `<` or `&`) ends, or -1 when none starts there. */
  endAt(start: number): number {
    const html = this.html;
    if (html.charCodeAt(start) === 0x26) return referenceEnd(html, start);
    for (let index = 0; index < SCRIPT_LIKE.length; index += 1) {
      const name = SCRIPT_LIKE[index]!;
      const afterName = start + 1 + name.length;
      if (!hasNameAt(html, start + 1, name) || isAsciiWordCharacter(html.charCodeAt(afterName)))
        continue;
      const opened = this.tagEnd(afterName);
      if (opened === -1) break;
      const end = this.closingTagEnd(index, opened + 1);
      if (end !== -1) return end;
      break;
    }
    if (html.startsWith('<!--', start) && start + 4 < this.noCommentEndFrom) {
      const end = html.indexOf('-->', start + 4);
      if (end !== -1) return end + 3;
      this.noCommentEndFrom = start + 4;
    }
    const end = this.tagEnd(start + 1);
    return end === -1 ? -1 : end + 1;
  }

  /** The first `>` at or after `from`, or -1. */
  private tagEnd(from: number): number {
    if (from >= this.noTagEndFrom) return -1;
    const end = this.html.indexOf('>', from);
    if (end === -1) this.noTagEndFrom = from;
    return end;
  }

  /** The end of the first `</name\s*>` at or after `from`, for `SCRIPT_LIKE[index]`, or -1. */
  private closingTagEnd(index: number, from: number): number {
    if (from >= this.noClosingTagFrom[index]!) return -1;
    const html = this.html;
    const name = SCRIPT_LIKE[index]!;
    for (let next = from; ; ) {
      const closing = html.indexOf('</', next);
      if (closing === -1) break;
      next = closing + 1;
      if (!hasNameAt(html, closing + 2, name)) continue;
      let end = closing + 2 + name.length;
      while (isJsWhitespace(html.charCodeAt(end))) end += 1;
      if (html.charCodeAt(end) === 0x3e) return end + 1;
    }
    this.noClosingTagFrom[index] = from;
    return -1;
  }
}

/** The end of the character reference (`&#65;`, `&#x41;`, `&amp;`) at `start`, or -1. */
function referenceEnd(html: string, start: number): number {
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
export function isJsWhitespace(code: number): boolean {
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
