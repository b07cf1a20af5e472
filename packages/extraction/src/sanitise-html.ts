/**
 * Description HTML → HTML safe to render: basic formatting tags only, no scripts, styles, frames,
 * event handlers or `javascript:` links.
 *
 * Two paths with one contract. Most descriptions are already clean (plain `<p>`, `<ul>`, `<h3>`
 * from an ATS editor); a single regex pass proves that and returns the input unchanged, byte for
 * byte, which also keeps records equal to what the page published. Anything else — an unknown tag
 * or attribute, a comment, a URL that is not plainly http(s)/mailto/tel, unbalanced markup — is
 * rebuilt through htmlparser2's tokenizer from an allowlist, its elements nested at most 512 deep
 * (bound-nesting.ts). The rebuilt output passes the check, so sanitising twice changes nothing.
 */
import { Parser } from 'htmlparser2';
import { boundNesting } from './bound-nesting.js';
import { escapeHtmlAttribute, escapeHtmlText } from './html-text.js';

// prettier-ignore
const ALLOWED_TAGS = new Set([
  'a', 'abbr', 'b', 'blockquote', 'br', 'caption', 'cite', 'code', 'dd', 'del', 'div', 'dl',
  'dt', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'ins', 'kbd', 'li', 'mark', 'ol',
  'p', 'pre', 'q', 's', 'small', 'span', 'strike', 'strong', 'sub', 'sup', 'table', 'tbody',
  'td', 'tfoot', 'th', 'thead', 'tr', 'u', 'ul', 'section', 'article', 'header', 'footer',
]);

const VOID_TAGS = new Set(['br', 'hr']);

/** Removed together with everything inside them. */
// prettier-ignore
const DROPPED_WITH_CONTENT = new Set([
  'script', 'style', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'noscript',
  'template', 'svg', 'math', 'head', 'title', 'textarea', 'select', 'button', 'input', 'option',
  'base', 'link', 'meta', 'noembed', 'noframes', 'xmp', 'plaintext', 'canvas', 'audio', 'video',
]);

const GLOBAL_ATTRIBUTES = new Set(['title', 'lang', 'dir']);
const TAG_ATTRIBUTES: Record<string, ReadonlySet<string>> = {
  a: new Set(['href']),
  td: new Set(['colspan', 'rowspan']),
  th: new Set(['colspan', 'rowspan']),
  ol: new Set(['start', 'type']),
  li: new Set(['value']),
};

function isAllowedAttribute(tag: string, name: string): boolean {
  return GLOBAL_ATTRIBUTES.has(name) || TAG_ATTRIBUTES[tag]?.has(name) === true;
}

const SAFE_SCHEMES = new Set(['http', 'https', 'mailto', 'tel']);

/**
 * An href is kept when, after entity decoding and the removal of whitespace and control
 * characters that browsers ignore inside a scheme, it is relative or uses a safe scheme.
 */
export function isSafeUrl(decodedUrl: string): boolean {
  // eslint-disable-next-line no-control-regex
  const compact = decodedUrl.replace(/[\u0000-\u0020\u007f-\u009f]+/g, '');
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(compact);
  return scheme === null || SAFE_SCHEMES.has((scheme[1] ?? '').toLowerCase());
}

/** Sanitised HTML, trimmed. Clean input comes back unchanged (see the module comment). */
export function sanitiseHtml(html: string): string {
  const trimmed = html.trim();
  return isCleanHtml(trimmed) ? trimmed : rebuildHtml(trimmed).trim();
}

// ---------------------------------------------------------------------------------------------
// Fast path

const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
/** What may follow a tag name inside a clean tag: attributes, all double-quoted. */
const CLEAN_ATTRIBUTES = /^(?:\s+[a-zA-Z][a-zA-Z-]*="[^"<>]*")*\s*$/;
/** The only reference allowed in a fast-path URL: `&amp;` in query strings. */
const AMPERSAND_OTHER_THAN_AMP = /&(?!amp;)/;

function isAsciiLetter(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a);
}

/**
 * True when sanitising would not change the HTML: every tag is allowed, with allowed attributes
 * (double-quoted) and plainly safe URLs, and the markup is balanced. Text is never a risk: a `<`
 * that does not start a tag is text to the browser as well. Hand-written rather than a regex:
 * it runs on every description and must cost next to nothing.
 */
export function isCleanHtml(html: string): boolean {
  const open: string[] = [];
  let position = html.indexOf('<');
  while (position !== -1) {
    const next = html.charCodeAt(position + 1);
    if (next === 0x21 || next === 0x3f) return false; // comment, doctype, CDATA, processing instruction
    const isClosing = next === 0x2f;
    const nameStart = isClosing ? position + 2 : position + 1;
    if (!isAsciiLetter(html.charCodeAt(nameStart))) {
      if (isClosing) return false; // "</ x>", "</>": odd, rebuild
      position = html.indexOf('<', position + 1);
      continue;
    }
    let nameEnd = nameStart + 1;
    for (;;) {
      const code = html.charCodeAt(nameEnd);
      if (isAsciiLetter(code) || (code >= 0x30 && code <= 0x39)) nameEnd++;
      else break;
    }
    const tagEnd = html.indexOf('>', nameEnd);
    if (tagEnd === -1) return false;
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    if (!ALLOWED_TAGS.has(name)) return false;
    if (tagEnd !== nameEnd) {
      // Something between the name and ">": attributes, a "/" or whitespace.
      const rest = html.slice(nameEnd, tagEnd);
      if (isClosing) {
        if (rest.trim() !== '') return false;
      } else if (rest.endsWith('/')) {
        if (!VOID_TAGS.has(name) || !isCleanAttributeList(name, rest.slice(0, -1))) return false;
      } else if (!isCleanAttributeList(name, rest)) {
        return false;
      }
    }
    if (isClosing) {
      if (open.pop() !== name) return false;
    } else if (!VOID_TAGS.has(name)) {
      open.push(name);
    }
    position = html.indexOf('<', tagEnd + 1);
  }
  return open.length === 0;
}

function isCleanAttributeList(tag: string, attributes: string): boolean {
  if (!CLEAN_ATTRIBUTES.test(attributes)) return false;
  ATTRIBUTE.lastIndex = 0;
  for (let match = ATTRIBUTE.exec(attributes); match !== null; match = ATTRIBUTE.exec(attributes)) {
    const name = (match[1] ?? '').toLowerCase();
    const value = match[2] ?? '';
    if (!isAllowedAttribute(tag, name)) return false;
    if (
      name === 'href' &&
      (AMPERSAND_OTHER_THAN_AMP.test(value) || !isSafeUrl(value.replaceAll('&amp;', '&')))
    )
      return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Rebuild

function rebuildHtml(html: string): string {
  let output = '';
  let droppedDepth = 0;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (droppedDepth > 0 || DROPPED_WITH_CONTENT.has(name)) {
          if (DROPPED_WITH_CONTENT.has(name)) droppedDepth++;
          return;
        }
        if (!ALLOWED_TAGS.has(name)) return; // unwrap: keep the content, drop the tag
        output += `<${name}`;
        for (const [attribute, value] of Object.entries(attributes)) {
          if (!isAllowedAttribute(name, attribute)) continue;
          if (attribute === 'href' && !isSafeUrl(value)) continue;
          output += ` ${attribute}="${escapeHtmlAttribute(value)}"`;
        }
        output += '>';
      },
      onclosetag(name) {
        if (droppedDepth > 0) {
          if (DROPPED_WITH_CONTENT.has(name)) droppedDepth--;
          return;
        }
        if (ALLOWED_TAGS.has(name) && !VOID_TAGS.has(name)) output += `</${name}>`;
      },
      ontext(text) {
        if (droppedDepth === 0) output += escapeHtmlText(text);
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(boundNesting(html));
  parser.end();
  return output;
}
