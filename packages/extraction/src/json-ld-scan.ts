/**
 * Finds and parses `<script type="application/ld+json">` blocks by scanning the raw HTML string.
 *
 * No DOM is built on purpose: parsing the page into a tree costs far more than everything else we
 * do with a typical 30 KB posting page, and JSON-LD needs only the script's raw text (script
 * content is never entity-decoded by browsers either). The scanner follows the HTML tokenizer
 * just enough to be right where it matters: tag and attribute names are case-insensitive,
 * attribute values may be quoted or bare, commented-out scripts are ignored, and the content of
 * every script (JSON-LD or not) is skipped as a whole, so markup quoted inside JavaScript is
 * never mistaken for a tag.
 */

const GT = 0x3e; // >
const SLASH = 0x2f; // /
const BANG = 0x21; // !
const EQUALS = 0x3d; // =
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

/**
 * Called with each JSON-LD script's raw text and the index just past its `</script` tag; return
 * true to stop scanning.
 */
export type JsonLdTextVisitor = (rawText: string, end: number) => boolean | void;

/** Returned by `parseJsonLdText` for a block that is not valid JSON even after repair. */
export const UNPARSEABLE: unique symbol = Symbol('unparseable JSON-LD');

/** Parsed JSON-LD values of every script block in document order; broken blocks are skipped. */
export function findJsonLdBlocks(html: string): unknown[] {
  const blocks: unknown[] = [];
  scanJsonLdScripts(html, (rawText) => {
    const parsed = parseJsonLdText(rawText);
    if (parsed !== UNPARSEABLE) blocks.push(parsed);
  });
  return blocks;
}

/**
 * Visits the raw text of each JSON-LD script in document order. Stopping early matters: a
 * posting's JSON-LD usually sits in `<head>`, so the (much larger) body is never scanned.
 */
export function scanJsonLdScripts(html: string, visit: JsonLdTextVisitor): void {
  const length = html.length;
  let position = 0;
  while (position < length) {
    const tagStart = html.indexOf('<', position);
    if (tagStart === -1) return;

    if (html.charCodeAt(tagStart + 1) === BANG && html.startsWith('--', tagStart + 2)) {
      // Browsers ignore scripts inside comments; templates sometimes leave a stale block there.
      const commentEnd = html.indexOf('-->', tagStart + 4);
      if (commentEnd === -1) return;
      position = commentEnd + 3;
      continue;
    }
    if (!isScriptOpenTag(html, tagStart)) {
      position = tagStart + 1;
      continue;
    }

    const tag = readScriptTagAttributes(html, tagStart + 7);
    if (tag === null) return; // unterminated tag at the end of a truncated page
    const contentStart = tag.end + 1;
    const contentEnd = findScriptEnd(html, contentStart);
    if (contentEnd === -1) return; // unterminated script: the page was cut off, its JSON with it
    if (tag.type !== null && isJsonLdMediaType(tag.type)) {
      if (visit(html.slice(contentStart, contentEnd), contentEnd + 8) === true) return;
    }
    position = contentEnd + 8; // past "</script"
  }
}

/**
 * JSON.parse, then one repair attempt for the breakage seen on real career sites: HTML comment or
 * CDATA wrappers, trailing commas, and raw line breaks or tabs inside string values.
 */
export function parseJsonLdText(rawText: string): unknown {
  const text = rawText.trim();
  if (text === '') return UNPARSEABLE;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Fall through to the repair attempt below.
  }
  const repaired = repairJson(stripWrappers(text));
  if (repaired === text) return UNPARSEABLE;
  try {
    return JSON.parse(repaired) as unknown;
  } catch {
    return UNPARSEABLE;
  }
}

/** `<script` followed by whitespace, `/` or `>` (so `<scripts>` or `<scriptx` do not count). */
function isScriptOpenTag(html: string, tagStart: number): boolean {
  return (
    matchesLowercaseWord(html, tagStart + 1, 'script') &&
    isTagNameEnd(html.charCodeAt(tagStart + 7))
  );
}

function findScriptEnd(html: string, from: number): number {
  let position = from;
  for (;;) {
    const candidate = html.indexOf('</', position);
    if (candidate === -1) return -1;
    if (
      matchesLowercaseWord(html, candidate + 2, 'script') &&
      isTagNameEnd(html.charCodeAt(candidate + 8))
    ) {
      return candidate;
    }
    position = candidate + 2;
  }
}

/** Case-insensitive match of an all-lowercase ASCII word at `at`. */
function matchesLowercaseWord(html: string, at: number, word: string): boolean {
  if (at + word.length > html.length) return false;
  for (let i = 0; i < word.length; i++) {
    // Setting bit 0x20 lower-cases ASCII letters; `word` holds letters only.
    if ((html.charCodeAt(at + i) | 0x20) !== word.charCodeAt(i)) return false;
  }
  return true;
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d || code === 0x0c;
}

function isTagNameEnd(code: number): boolean {
  return isWhitespace(code) || code === SLASH || code === GT;
}

interface ScriptTag {
  /** Index of the `>` closing the start tag. */
  end: number;
  /** Value of the first `type` attribute, or null when absent. */
  type: string | null;
}

/**
 * Reads attributes from just after `<script` up to the closing `>`, as the HTML tokenizer does:
 * a `>` inside a quoted value does not end the tag, and the first of duplicate attributes wins.
 */
function readScriptTagAttributes(html: string, from: number): ScriptTag | null {
  const length = html.length;
  let position = from;
  let type: string | null = null;
  for (;;) {
    while (
      position < length &&
      (isWhitespace(html.charCodeAt(position)) || html.charCodeAt(position) === SLASH)
    ) {
      position++;
    }
    if (position >= length) return null;
    if (html.charCodeAt(position) === GT) return { end: position, type };

    const nameStart = position;
    position++; // the first character belongs to the name even when it is "=" (tokenizer rule)
    while (position < length) {
      const code = html.charCodeAt(position);
      if (isWhitespace(code) || code === SLASH || code === GT || code === EQUALS) break;
      position++;
    }
    const isTypeAttribute =
      position - nameStart === 4 && matchesLowercaseWord(html, nameStart, 'type');

    while (position < length && isWhitespace(html.charCodeAt(position))) position++;
    if (html.charCodeAt(position) !== EQUALS) continue; // attribute without a value
    position++;
    while (position < length && isWhitespace(html.charCodeAt(position))) position++;
    if (position >= length) return null;

    let value: string;
    const quote = html.charCodeAt(position);
    if (quote === DOUBLE_QUOTE || quote === SINGLE_QUOTE) {
      const valueEnd = html.indexOf(quote === DOUBLE_QUOTE ? '"' : "'", position + 1);
      if (valueEnd === -1) return null;
      value = html.slice(position + 1, valueEnd);
      position = valueEnd + 1;
    } else {
      const valueStart = position;
      while (position < length) {
        const code = html.charCodeAt(position);
        if (isWhitespace(code) || code === GT) break;
        position++;
      }
      value = html.slice(valueStart, position);
    }
    if (isTypeAttribute && type === null) type = value;
  }
}

/** `application/ld+json`, in any case, optionally with parameters such as `; charset=utf-8`. */
function isJsonLdMediaType(type: string): boolean {
  const semicolon = type.indexOf(';');
  const essence = (semicolon === -1 ? type : type.slice(0, semicolon)).trim();
  return essence.length === 19 && essence.toLowerCase() === 'application/ld+json';
}

/** Removes `<!-- -->` and `<![CDATA[ ]]>` wrappers (also behind `//`) and a trailing `;`. */
function stripWrappers(text: string): string {
  let result = text;
  for (let round = 0; round < 2; round++) {
    result = result
      .replace(/^(?:\/\/\s*)?(?:<!--|<!\[CDATA\[)\s*/, '')
      .replace(/\s*(?:\/\/\s*)?(?:-->|\]\]>)$/, '')
      .replace(/;\s*$/, '')
      .trim();
  }
  return result;
}

const CONTROL_ESCAPES: Record<string, string> = {
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\f': '\\f',
  '\b': '\\b',
};

/**
 * One string-aware pass (so commas and line breaks inside values are left alone): drops commas
 * that are followed only by whitespace and a closing bracket or by the end of the text, and
 * escapes raw control characters inside strings.
 */
function repairJson(text: string): string {
  let result = '';
  let copiedUpTo = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (inString) {
      if (char === '\\') {
        i++; // keep the escaped character as is
      } else if (char === '"') {
        inString = false;
      } else if (char.charCodeAt(0) < 0x20) {
        result +=
          text.slice(copiedUpTo, i) +
          (CONTROL_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
        copiedUpTo = i + 1;
      }
      continue;
    }
    if (char === '"') {
      inString = true;
    } else if (char === ',') {
      let next = i + 1;
      while (next < text.length && isWhitespace(text.charCodeAt(next))) next++;
      if (next === text.length || text[next] === '}' || text[next] === ']') {
        result += text.slice(copiedUpTo, i);
        copiedUpTo = i + 1;
      }
    }
  }
  return result + text.slice(copiedUpTo);
}
