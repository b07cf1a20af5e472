/**
 * Untrusted HTML with its elements nested at most 512 deep, for anything that builds a tree of it
 * (cheerio, the sanitiser's rebuild).
 *
 * htmlparser2, behind both, keeps its open elements in an array that it shifts at the front for
 * every start tag and searches for every end tag, so a tag costs as much as the depth it opens at:
 * 1 MB of `<div>` (200,000 levels) took 43 s to parse, and each doubling four times as long.
 * 512 is the depth at which Chrome's parser stops nesting; no page a person reads comes close.
 *
 * Past the limit a start tag is dropped (a raw-text element such as `<script>` with its text and
 * end tag, so that its text is not read as markup). To know the depth htmlparser2 reaches, the
 * scan follows htmlparser2's own rules rather than the HTML standard's: its tokenizer for where
 * tags, comments, declarations and raw text are (`>` inside a quoted value does not end a tag);
 * its parser for what opens and closes an element (void elements, the implied ends of `<p>`,
 * `<li>`, `<td>`…, self-closing tags only inside SVG and MathML, an end tag closing everything
 * above the nearest element of its name). The depth it tracks is htmlparser2's, element for
 * element; a property test holds the two together. A page that never nests past the limit (every
 * real page) comes back as the same string.
 *
 * One pass with indexOf from tag to tag; text is never walked character by character.
 */

/** Chrome's limit (kMaximumHTMLParserDOMTreeDepth = 512). */
export const MAX_NESTING_DEPTH = 512;

export function boundNesting(html: string, maxDepth = MAX_NESTING_DEPTH): string {
  const elements = new OpenElements(maxDepth);
  const length = html.length;
  let kept = '';
  let keptEndsWithLt = false;
  let copied = 0;
  let position = 0;
  while (position < length) {
    const start = html.indexOf('<', position);
    if (start === -1) break;
    const next = html.charCodeAt(start + 1);
    if (isAsciiLetter(next)) {
      let nameEnd = start + 2;
      while (nameEnd < length && !isEndOfTagSection(html.charCodeAt(nameEnd))) nameEnd++;
      const tagEnd = startTagEnd(html, nameEnd);
      if (tagEnd === -1) break; // cut off: htmlparser2 reads no tag after it
      const name = html.slice(start + 1, nameEnd).toLowerCase();
      const isSelfClosing = tagEnd < 0;
      const end = isSelfClosing ? -tagEnd - 2 : tagEnd;
      const rawTextEnd = isSelfClosing ? undefined : rawTextEndOf(name);
      let after = end + 1;
      let rawTextClosed = true;
      if (rawTextEnd !== undefined) {
        const closing = rawTextEndAt(html, after, rawTextEnd);
        if (closing === -1) {
          after = length;
          rawTextClosed = false;
        } else {
          const close = html.indexOf('>', closing + rawTextEnd.length);
          after = close === -1 ? length : close + 1;
        }
      }
      if (elements.wouldExceed(name, isSelfClosing)) {
        if (start > copied) {
          kept += html.slice(copied, start);
          keptEndsWithLt = html.charCodeAt(start - 1) === LT;
        }
        // A `<` of text just before must not meet what follows (`<<div>a>` is not `<a>`).
        if (keptEndsWithLt) {
          kept += ' ';
          keptEndsWithLt = false;
        }
        copied = after;
      } else {
        elements.open(name, isSelfClosing);
        if (rawTextEnd !== undefined && rawTextClosed) elements.close(rawTextEnd.slice(2));
      }
      position = after;
    } else if (next === 0x2f) {
      position = afterEndTag(html, start + 2, elements);
    } else if (next === 0x21) {
      position = afterDeclaration(html, start);
    } else if (next === 0x3f) {
      position = after(html.indexOf('>', start + 2), length);
    } else {
      position = start + 1; // a `<` that starts nothing is text
    }
  }
  return copied === 0 ? html : kept + html.slice(copied);
}

// ---------------------------------------------------------------------------------------------
// htmlparser2's tokenizer (10.x, HTML mode)

/** Just past `end` (the last character of a construct), or `length` when it was never closed. */
function after(end: number, length: number): number {
  return end === -1 ? length : end + 1;
}

/**
 * The index of the `>` ending a start tag whose name ends at `from`, as `-index - 2` when the tag
 * is self-closing (`/>`), or -1 when the tag is cut off. A port of htmlparser2's attribute
 * states: quoted values skip to their quote, anything else goes a character at a time.
 */
function startTagEnd(html: string, from: number): number {
  let state = BEFORE_ATTRIBUTE;
  for (let index = from; index < html.length; index++) {
    const code = html.charCodeAt(index);
    switch (state) {
      case BEFORE_ATTRIBUTE:
        if (code === GT) return index;
        if (code === SLASH) state = SELF_CLOSING;
        else if (!isWhitespace(code)) state = ATTRIBUTE_NAME;
        break;
      case SELF_CLOSING:
        if (code === GT) return -index - 2;
        if (!isWhitespace(code)) {
          state = BEFORE_ATTRIBUTE;
          index--; // read again in the new state
        }
        break;
      case ATTRIBUTE_NAME:
        if (code === EQUALS || isEndOfTagSection(code)) {
          state = AFTER_ATTRIBUTE_NAME;
          index--;
        }
        break;
      case AFTER_ATTRIBUTE_NAME:
        if (code === EQUALS) state = BEFORE_VALUE;
        else if (code === SLASH || code === GT) {
          state = BEFORE_ATTRIBUTE;
          index--;
        } else if (!isWhitespace(code)) state = ATTRIBUTE_NAME;
        break;
      case BEFORE_VALUE:
        if (code === DOUBLE_QUOTE || code === SINGLE_QUOTE) {
          index = html.indexOf(code === DOUBLE_QUOTE ? '"' : "'", index + 1);
          if (index === -1) return -1;
          state = BEFORE_ATTRIBUTE;
        } else if (!isWhitespace(code)) {
          state = UNQUOTED_VALUE;
          index--;
        }
        break;
      default: // UNQUOTED_VALUE
        if (code === GT || isWhitespace(code)) {
          state = BEFORE_ATTRIBUTE;
          index--;
        }
    }
  }
  return -1;
}

const BEFORE_ATTRIBUTE = 0;
const SELF_CLOSING = 1;
const ATTRIBUTE_NAME = 2;
const AFTER_ATTRIBUTE_NAME = 3;
const BEFORE_VALUE = 4;
const UNQUOTED_VALUE = 5;

/**
 * The end sequence that closes a raw-text element opened by a start tag of this name, if it opens
 * one. htmlparser2 tells title, textarea and xmp apart by their second letter only, after a `t`
 * or an `x`: `<tmp>` is closed by `</xmp`, `<xitle>` by `</title`.
 */
function rawTextEndOf(name: string): string | undefined {
  switch (name.charCodeAt(0)) {
    case 0x73: // s
      return name === 'script' ? '</script' : name === 'style' ? '</style' : undefined;
    case 0x74: // t
    case 0x78: // x
      if (name.length === 5 && name.endsWith('itle')) return '</title';
      if (name.length === 8 && name.endsWith('extarea')) return '</textarea';
      if (name.length === 3 && name.endsWith('mp')) return '</xmp';
  }
  return undefined;
}

/**
 * Where the raw text that starts at `from` ends: the index of the `</name` followed by
 * whitespace or `>`, or -1. A port of htmlparser2's matcher, quirks included: it compares
 * `code | 0x20` (so U+001C reads as `<`) and, except in a title, skips to the next `<` after
 * a mismatch.
 */
function rawTextEndAt(html: string, from: number, sequence: string): number {
  const isTitle = sequence === '</title';
  let matched = 0;
  for (let index = from; index < html.length; index++) {
    const code = html.charCodeAt(index);
    if (matched === sequence.length) {
      if (code === GT || isWhitespace(code)) return index - sequence.length;
      matched = 0;
    }
    if ((code | 0x20) === sequence.charCodeAt(matched)) {
      matched++;
    } else if (matched === 0) {
      if (!isTitle) {
        index = html.indexOf('<', index + 1);
        if (index === -1) return -1;
        matched = 1;
      }
    } else {
      matched = code === LT ? 1 : 0;
    }
  }
  return -1;
}

/** After `</` (at `from`): where text resumes, having closed what the end tag closes. */
function afterEndTag(html: string, from: number, elements: OpenElements): number {
  const length = html.length;
  let index = from;
  while (index < length && isWhitespace(html.charCodeAt(index))) index++;
  if (index === length) return length;
  const code = html.charCodeAt(index);
  if (code === GT) return index + 1; // `</>` is nothing
  // `</3…>`, `</-…>`: a bogus comment, to the next `>`
  if (!isAsciiLetter(code)) return after(html.indexOf('>', index + 1), length);
  let nameEnd = index + 1;
  while (nameEnd < length) {
    const next = html.charCodeAt(nameEnd);
    if (next === GT || isWhitespace(next)) break;
    nameEnd++;
  }
  if (nameEnd === length) return length;
  elements.close(html.slice(index, nameEnd).toLowerCase());
  return after(html.indexOf('>', nameEnd), length);
}

/** After `<!` at `start`: comments to `-->`, CDATA to `]]>`, anything else to `>`. */
function afterDeclaration(html: string, start: number): number {
  const length = html.length;
  const next = html.charCodeAt(start + 2);
  if (next === 0x5b) {
    // `<![CDATA[`, matched case-sensitively; a mismatch makes a declaration from there
    let index = start + 3;
    for (let matched = 0; matched < CDATA.length; matched++, index++) {
      if (index === length) return length;
      if (html.charCodeAt(index) !== CDATA.charCodeAt(matched))
        return after(html.indexOf('>', index), length);
    }
    const end = html.indexOf(']]>', index);
    return end === -1 ? length : end + 3;
  }
  if (next === 0x2d) {
    if (html.charCodeAt(start + 3) === 0x2d) {
      // The opening dashes count towards the end: `<!-->` and `<!--->` are whole comments.
      const end = html.indexOf('-->', start + 2);
      return end === -1 ? length : end + 3;
    }
    return after(html.indexOf('>', start + 4), length);
  }
  return after(html.indexOf('>', start + 3), length);
}

const CDATA = 'CDATA[';

// ---------------------------------------------------------------------------------------------
// htmlparser2's parser: what opens and closes an element

// prettier-ignore
const VOID_ELEMENTS = new Set([
  'area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input',
  'isindex', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr',
]);

const FOREIGN_ELEMENTS = new Set(['math', 'svg']);
// prettier-ignore
const INTEGRATION_ELEMENTS = new Set([
  'mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml', 'foreignobject', 'desc', 'title',
]);

const CLOSES_P = new Set(['p']);
const FORM_ELEMENTS = new Set([
  'input',
  'option',
  'optgroup',
  'select',
  'button',
  'datalist',
  'textarea',
]);
const TABLE_SECTIONS = new Set(['thead', 'tbody']);
const DD_DT = new Set(['dd', 'dt']);
const RT_RP = new Set(['rt', 'rp']);

/** Start tags that first close the open elements on top of the stack named here. */
// prettier-ignore
const OPEN_IMPLIES_CLOSE = new Map<string, ReadonlySet<string>>([
  ['tr', new Set(['tr', 'th', 'td'])], ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])], ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])], ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])], ['dd', DD_DT], ['dt', DD_DT],
  ['rt', RT_RP], ['rp', RT_RP], ['tbody', TABLE_SECTIONS], ['tfoot', TABLE_SECTIONS],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map(
    (name) => [name, FORM_ELEMENTS] as const,
  ),
  ...[
    'p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'address', 'article', 'aside', 'blockquote',
    'details', 'div', 'dl', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hr',
    'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul',
  ].map((name) => [name, CLOSES_P] as const),
]);

/**
 * htmlparser2's open elements and its foreign-content flags (an SVG or MathML element pushes
 * one, an HTML integration point such as `<foreignObject>` another, and only their end tags pop
 * them: `<div><svg></div>` leaves one behind, so they need a bound of their own).
 */
class OpenElements {
  private readonly names: string[] = [];
  /** How many of each name are open: an end tag with none open costs nothing. */
  private readonly counts = new Map<string, number>();
  private readonly foreign: boolean[] = [false];

  constructor(private readonly maxDepth: number) {}

  /** Whether opening `name` would take either stack past the limit. */
  wouldExceed(name: string, isSelfClosing: boolean): boolean {
    if (
      (FOREIGN_ELEMENTS.has(name) || INTEGRATION_ELEMENTS.has(name)) &&
      this.foreign.length > this.maxDepth
    )
      return true;
    if (this.names.length < this.maxDepth || VOID_ELEMENTS.has(name)) return false;
    if (OPEN_IMPLIES_CLOSE.get(name)?.has(this.names[this.names.length - 1]!) === true)
      return false;
    const isForeign = FOREIGN_ELEMENTS.has(name)
      ? true
      : INTEGRATION_ELEMENTS.has(name)
        ? false
        : this.foreign[this.foreign.length - 1];
    return !(isSelfClosing && isForeign === true);
  }

  open(name: string, isSelfClosing: boolean): void {
    const implied = OPEN_IMPLIES_CLOSE.get(name);
    if (implied !== undefined) {
      while (this.names.length > 0 && implied.has(this.names[this.names.length - 1]!)) this.pop();
    }
    if (VOID_ELEMENTS.has(name)) return;
    this.names.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (FOREIGN_ELEMENTS.has(name)) this.foreign.push(true);
    else if (INTEGRATION_ELEMENTS.has(name)) this.foreign.push(false);
    if (isSelfClosing && this.foreign[this.foreign.length - 1] === true) this.pop();
  }

  close(name: string): void {
    if (FOREIGN_ELEMENTS.has(name) || INTEGRATION_ELEMENTS.has(name)) this.foreign.pop();
    if (VOID_ELEMENTS.has(name) || (this.counts.get(name) ?? 0) === 0) return;
    while (this.pop() !== name);
  }

  private pop(): string {
    const name = this.names.pop()!;
    this.counts.set(name, this.counts.get(name)! - 1);
    return name;
  }
}

// ---------------------------------------------------------------------------------------------
// Characters

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const EQUALS = 0x3d;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

function isAsciiLetter(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
}

/** htmlparser2's whitespace: space, tab, line feed, form feed, carriage return. */
function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x09 || code === 0x0c || code === 0x0d;
}

function isEndOfTagSection(code: number): boolean {
  return code === SLASH || code === GT || isWhitespace(code);
}
