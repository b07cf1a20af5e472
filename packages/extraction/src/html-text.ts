/**
 * HTML → plain text without building a DOM: one regex pass over the tags, entity decoding from a
 * small table with htmlparser2 as the fallback for anything the table does not know.
 *
 * A posting description is usually well-formed (it has been through the sanitiser, or came from an
 * ATS editor), so the cheap pass is right where it matters: block elements become lines, list
 * items keep their own line, whitespace is collapsed the way a browser renders it. The result
 * also keeps, per line, whether it looks like a section heading, which the requirements reader
 * needs.
 */
import { Parser } from 'htmlparser2';

export type TextBlockKind = 'heading' | 'item' | 'paragraph';

export interface TextBlock {
  text: string;
  kind: TextBlockKind;
  /** Every character of the line sat inside `<b>` or `<strong>` (a heading written as bold text). */
  isEmphasised: boolean;
}

// ---------------------------------------------------------------------------------------------
// Entities

/** The named entities seen in job descriptions; anything else goes to htmlparser2's full table. */
const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  ndash: '\u2013',
  mdash: '\u2014',
  lsquo: '\u2018',
  rsquo: '\u2019',
  sbquo: '\u201a',
  ldquo: '\u201c',
  rdquo: '\u201d',
  bdquo: '\u201e',
  hellip: '\u2026',
  bull: '\u2022',
  middot: '\u00b7',
  copy: '\u00a9',
  reg: '\u00ae',
  trade: '\u2122',
  euro: '\u20ac',
  pound: '\u00a3',
  yen: '\u00a5',
  cent: '\u00a2',
  sect: '\u00a7',
  deg: '\u00b0',
  times: '\u00d7',
  divide: '\u00f7',
  laquo: '\u00ab',
  raquo: '\u00bb',
  shy: '\u00ad',
  ensp: '\u2002',
  emsp: '\u2003',
  thinsp: '\u2009',
  zwj: '\u200d',
  zwnj: '\u200c',
  auml: '\u00e4',
  ouml: '\u00f6',
  uuml: '\u00fc',
  Auml: '\u00c4',
  Ouml: '\u00d6',
  Uuml: '\u00dc',
  szlig: '\u00df',
  eacute: '\u00e9',
  egrave: '\u00e8',
  ecirc: '\u00ea',
  agrave: '\u00e0',
  aacute: '\u00e1',
  ccedil: '\u00e7',
  oacute: '\u00f3',
  iacute: '\u00ed',
  uacute: '\u00fa',
  ntilde: '\u00f1',
  Eacute: '\u00c9',
};

/** HTML's remapping of numeric references 0x80–0x9F to windows-1252 (e.g. &#150; is an en dash). */
// prettier-ignore
const WINDOWS_1252: Record<number, number> = {
  0x80: 0x20ac, 0x82: 0x201a, 0x83: 0x0192, 0x84: 0x201e, 0x85: 0x2026, 0x86: 0x2020,
  0x87: 0x2021, 0x88: 0x02c6, 0x89: 0x2030, 0x8a: 0x0160, 0x8b: 0x2039, 0x8c: 0x0152,
  0x8e: 0x017d, 0x91: 0x2018, 0x92: 0x2019, 0x93: 0x201c, 0x94: 0x201d, 0x95: 0x2022,
  0x96: 0x2013, 0x97: 0x2014, 0x98: 0x02dc, 0x99: 0x2122, 0x9a: 0x0161, 0x9b: 0x203a,
  0x9c: 0x0153, 0x9e: 0x017e, 0x9f: 0x0178,
};

const ENTITY = /&(?:#(\d{1,8})|#[xX]([0-9a-fA-F]{1,7})|([a-zA-Z][a-zA-Z0-9]{0,31}))(;?)/g;

function decodeCodePoint(code: number): string {
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
  return String.fromCodePoint(WINDOWS_1252[code] ?? code);
}

/**
 * Decodes character references as a browser does in text. The common cases are handled here;
 * a named reference outside the table (or one without its `;`, which only some legacy names
 * allow) sends the whole string through htmlparser2's spec-complete decoder.
 */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  let needsFullDecoder = false;
  const decoded = text.replace(
    ENTITY,
    (match, decimal?: string, hex?: string, name?: string, semicolon?: string) => {
      if (decimal !== undefined) return decodeCodePoint(Number.parseInt(decimal, 10));
      if (hex !== undefined) return decodeCodePoint(Number.parseInt(hex, 16));
      const value = semicolon === ';' && name !== undefined ? NAMED_ENTITIES[name] : undefined;
      if (value !== undefined) return value;
      needsFullDecoder = true;
      return match;
    },
  );
  return needsFullDecoder ? decodeWithHtmlparser2(text) : decoded;
}

function decodeWithHtmlparser2(text: string): string {
  let result = '';
  const parser = new Parser(
    {
      ontext(chunk) {
        result += chunk;
      },
    },
    { decodeEntities: true },
  );
  // Escaping "<" keeps the input a single text node; the decoder turns it back.
  parser.write(text.replaceAll('<', '&lt;'));
  parser.end();
  return result;
}

/** Escapes text for an HTML text node. */
export function escapeHtmlText(text: string): string {
  return text.replace(/[&<>]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : '&gt;',
  );
}

/** Escapes text for a double-quoted attribute value. */
export function escapeHtmlAttribute(text: string): string {
  return text.replace(/[&<>"]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : char === '>' ? '&gt;' : '&quot;',
  );
}

// ---------------------------------------------------------------------------------------------
// HTML → blocks

/** Elements that start a new line of text. */
// prettier-ignore
const BLOCK_TAGS = new Set([
  'address', 'article', 'aside', 'blockquote', 'br', 'dd', 'details', 'div', 'dl', 'dt',
  'fieldset', 'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
  'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table',
  'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);

/** Elements whose content is never text a reader sees. */
// prettier-ignore
const HIDDEN_CONTENT_TAGS = new Set([
  'script', 'style', 'noscript', 'template', 'title', 'textarea', 'head', 'svg', 'iframe', 'object',
]);

const HEADING_TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
const EMPHASIS_TAGS = new Set(['b', 'strong']);
const BULLET = /^(?:[-–—*•·▪◦●○■□►▸➤✓✔]|\d{1,2}[.)])\s+/;
const HAS_BLOCK_MARKUP = /<(?:p|div|br|li|h[1-6]|ul|ol|table|tr|section|article|dd|dt)\b/i;
const NON_SPACE = /[^\s\u00a0]/;

/** Whitespace other than single spaces: a line break inside a paragraph, a tab, a no-break space. */
function needsCollapse(line: string): boolean {
  return (
    line.includes('  ') ||
    line.includes('\n') ||
    line.includes('\t') ||
    line.includes('\r') ||
    line.includes('\u00a0') ||
    line.includes('\f')
  );
}

function isAsciiLetter(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
}

function mayStartWithBullet(text: string): boolean {
  const code = text.charCodeAt(0);
  return code === 0x2d || code === 0x2a || (code >= 0x30 && code <= 0x39) || code > 0x7f;
}

/** Collects the current line's raw text and turns it into a block when the line ends. */
class LineCollector {
  readonly blocks: TextBlock[] = [];
  private text = '';
  private kind: TextBlockKind = 'paragraph';
  /** Segments with their emphasis, kept only for lines that have emphasised text at all. */
  private segments: { text: string; isEmphasised: boolean }[] | null = null;

  add(text: string, isEmphasised: boolean): void {
    if (text === '') return;
    this.text += text;
    if (isEmphasised) this.segments ??= [];
    this.segments?.push({ text, isEmphasised });
  }

  /** Ends the current line; `nextKind` is the kind of the line that starts now. */
  flush(nextKind: TextBlockKind = 'paragraph'): void {
    let text = this.text.trim();
    if (text !== '') {
      if (text.includes('&')) text = decodeEntities(text);
      text = needsCollapse(text) ? normaliseWhitespace(text) : text;
      let kind = this.kind;
      if (kind === 'paragraph' && mayStartWithBullet(text)) {
        const bullet = BULLET.exec(text);
        if (bullet !== null) {
          kind = 'item';
          text = text.slice(bullet[0].length).trim();
        }
      }
      if (text !== '') this.blocks.push({ text, kind, isEmphasised: this.isEmphasised() });
    }
    this.text = '';
    this.kind = nextKind;
    this.segments = null;
  }

  private isEmphasised(): boolean {
    if (this.segments === null) return false;
    let hasEmphasisedText = false;
    for (const segment of this.segments) {
      if (!NON_SPACE.test(segment.text)) continue;
      if (!segment.isEmphasised) return false;
      hasEmphasisedText = true;
    }
    return hasEmphasisedText;
  }
}

/**
 * Splits HTML (or plain text) into lines of visible text: one per paragraph, heading, list item or
 * `<br>`-separated line, with a leading bullet ("- ", "• ", "1. ") making a line an item. Text
 * without block markup is split at its own line breaks, as ATS exports that put plain text in the
 * description field intend. Entities are decoded and whitespace collapsed as a browser would.
 *
 * This runs on every description, so it is built for speed: one indexOf walk over the tags, no
 * per-character work in text, native trims and substring checks per line instead of regex
 * passes over the whole text (on a 10 KB description each such pass cost as much as the
 * JSON.parse of the page's JSON-LD).
 */
export function htmlToBlocks(html: string): TextBlock[] {
  const hasBlockMarkup = HAS_BLOCK_MARKUP.test(html);
  const lines = new LineCollector();
  let emphasis = 0;
  const addText = (text: string): void => {
    if (hasBlockMarkup || !/[\r\n]/.test(text)) {
      lines.add(text, emphasis > 0);
      return;
    }
    const parts = text.split(/\r\n?|\n/);
    for (let index = 0; index < parts.length; index++) {
      if (index > 0) lines.flush();
      lines.add(parts[index] ?? '', emphasis > 0);
    }
  };
  let position = 0;
  // A "<" that starts no tag stays in the text: the search goes on past it, and the text is
  // added in one piece with what follows (one piece per "<" made 1 MB of them cost seconds).
  let searchFrom = 0;
  for (;;) {
    const tagStart = html.indexOf('<', searchFrom);
    if (tagStart === -1) break;
    searchFrom = tagStart + 1;
    const next = html.charCodeAt(tagStart + 1);
    const isClosing = next === 0x2f;
    const nameStart = isClosing ? tagStart + 2 : tagStart + 1;
    if (!isAsciiLetter(html.charCodeAt(nameStart))) {
      if (next === 0x21 || next === 0x3f) {
        // A comment or declaration: skipped.
        addText(html.slice(position, tagStart));
        const isComment = html.startsWith('<!--', tagStart);
        const end = isComment ? html.indexOf('-->', tagStart + 4) : html.indexOf('>', tagStart);
        position = end === -1 ? html.length : end + (isComment ? 3 : 1);
        searchFrom = position;
      }
      continue;
    }
    addText(html.slice(position, tagStart));
    const tagEnd = findTagEnd(html, tagStart);
    if (tagEnd === -1) {
      position = html.length; // a cut-off tag at the end
      break;
    }
    const name = readTagName(html, nameStart);
    position = tagEnd;
    searchFrom = tagEnd;
    if (!isClosing && HIDDEN_CONTENT_TAGS.has(name)) {
      const end = indexOfClosingTag(html, name, position);
      position = end === -1 ? html.length : end;
      searchFrom = position;
    } else if (EMPHASIS_TAGS.has(name)) {
      emphasis = Math.max(0, emphasis + (isClosing ? -1 : 1));
    } else if (BLOCK_TAGS.has(name)) {
      if (name === 'td' || name === 'th') lines.add(' ', false);
      else if (isClosing) lines.flush();
      else
        lines.flush(
          name === 'li' || name === 'dd'
            ? 'item'
            : HEADING_TAGS.has(name)
              ? 'heading'
              : 'paragraph',
        );
    }
  }
  addText(html.slice(position));
  lines.flush();
  return lines.blocks;
}

/**
 * The end of a tag that starts at `from` (the index of `<`): the index just past its `>`, skipping
 * quoted attribute values, or -1 when the tag is not closed.
 */
export function findTagEnd(html: string, from: number): number {
  const close = html.indexOf('>', from);
  if (close === -1) return -1;
  let position = from + 1;
  while (position < close) {
    const code = html.charCodeAt(position);
    if (code === 0x22 || code === 0x27) break;
    position++;
  }
  if (position === close) return close + 1; // the common case: no quoted value that could hold a ">"
  while (position < html.length) {
    const code = html.charCodeAt(position);
    if (code === 0x22 || code === 0x27) {
      const end = html.indexOf(code === 0x22 ? '"' : "'", position + 1);
      if (end === -1) return -1;
      position = end + 1;
    } else if (code === 0x3e) {
      return position + 1;
    } else {
      position++;
    }
  }
  return -1;
}

/**
 * HTML with each tag (`<` to the next `>`) replaced by `replacement`, as `/<[^>]*>/g` would, in
 * one indexOf pass: that pattern scans to the end from every `<` that no `>` follows.
 */
export function withoutTags(html: string, replacement = ' '): string {
  let result = '';
  let copied = 0;
  for (let start = html.indexOf('<'); start !== -1; start = html.indexOf('<', copied)) {
    const end = html.indexOf('>', start + 1);
    if (end === -1) break; // no `>` after this `<`, so none after any later one
    result += html.slice(copied, start) + replacement;
    copied = end + 1;
  }
  return copied === 0 ? html : result + html.slice(copied);
}

/** Reads the lower-cased tag name starting at `from` (lower-casing only when needed). */
function readTagName(html: string, from: number): string {
  let end = from;
  let hasUpperCase = false;
  while (end < html.length) {
    const code = html.charCodeAt(end);
    if (code >= 0x61 && code <= 0x7a) end++;
    else if (code >= 0x41 && code <= 0x5a) {
      hasUpperCase = true;
      end++;
    } else if ((code >= 0x30 && code <= 0x39) || code === 0x2d || code === 0x3a) end++;
    else break;
  }
  const name = html.slice(from, end);
  return hasUpperCase ? name.toLowerCase() : name;
}

function indexOfClosingTag(html: string, name: string, from: number): number {
  const pattern = new RegExp(`</${name}\\s*>`, 'ig');
  pattern.lastIndex = from;
  const match = pattern.exec(html);
  return match === null ? -1 : match.index + match[0].length;
}

/** Visible text of HTML, one line per block (see htmlToBlocks), or null when there is none. */
export function htmlToText(html: string): string | null {
  return blocksToText(htmlToBlocks(html));
}

export function blocksToText(blocks: readonly TextBlock[]): string | null {
  if (blocks.length === 0) return null;
  return blocks.map((block) => block.text).join('\n');
}

function isSpace(code: number): boolean {
  // prettier-ignore
  return (
    code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0d || code === 0x0c ||
    code === 0xa0 || code === 0x0b || code === 0x2028 || code === 0x2029 || code === 0x202f ||
    code === 0x3000 || code === 0xfeff || (code >= 0x2000 && code <= 0x200a) || code === 0x1680
  );
}

/**
 * Collapses runs of whitespace (no-break spaces included) to one space and trims: how texts are
 * compared and how a browser renders them. A loop, because the regex equivalent dominated the
 * cost of a description's text conversion.
 */
export function normaliseWhitespace(text: string): string {
  let result = '';
  let runStart = 0;
  let pendingSpace = false;
  let index = 0;
  const length = text.length;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (!isSpace(code)) {
      index++;
      continue;
    }
    let end = index + 1;
    while (end < length && isSpace(text.charCodeAt(end))) end++;
    const isPlainSpace = code === 0x20 && end === index + 1;
    if (!isPlainSpace || index === 0 || end === length) {
      if (index > runStart) result += (pendingSpace ? ' ' : '') + text.slice(runStart, index);
      pendingSpace = result !== '' || (pendingSpace && index > runStart);
      runStart = end;
    }
    index = end;
  }
  if (runStart === 0) return text; // nothing to collapse
  if (runStart < length)
    result += (pendingSpace && result !== '' ? ' ' : '') + text.slice(runStart);
  return result;
}
