/**
 * Character-set detection for fetched bodies, after the HTML standard's encoding sniffing
 * algorithm (https://html.spec.whatwg.org/multipage/parsing.html#encoding-sniffing-algorithm),
 * reduced to what a crawler needs:
 *
 * 1. a byte-order mark — it wins over everything, as the standard says, because a BOM cannot be
 *    there by accident while `Content-Type` headers are often wrong (servers default to
 *    ISO-8859-1 for UTF-8 pages);
 * 2. the `charset` parameter of `Content-Type`;
 * 3. for HTML, a `<meta charset>` or `<meta http-equiv="Content-Type" content="…; charset=…">` in
 *    the first 1024 bytes; for XML, the `encoding` of the XML declaration;
 * 4. otherwise UTF-8 (the standard's locale-dependent fallback is windows-1252, but almost every
 *    undeclared page fetched today is UTF-8).
 *
 * This module imports nothing, so that the worker's page analyser threads load it alone
 * (`@gleaner/http/charset`).
 *
 * Labels are resolved by `TextDecoder`, which knows the WHATWG label table (`latin1` → windows-1252,
 * `sjis` → Shift_JIS…). A label it does not know is skipped, not fatal.
 */

export type CharsetSource = 'bom' | 'content-type' | 'meta' | 'xml-declaration' | 'default';

export interface DetectedCharset {
  /** The WHATWG encoding name, e.g. `utf-8`, `windows-1252`, `shift_jis`. */
  encoding: string;
  source: CharsetSource;
}

/** How many bytes the `<meta>` prescan looks at (the standard's figure). */
const PRESCAN_BYTES = 1024;

function resolveLabel(label: string | undefined | null): string | null {
  if (!label) return null;
  try {
    const encoding = new TextDecoder(label.trim().replace(/^["']|["']$/g, '')).encoding;
    // A page cannot really be UTF-16 if its ASCII-compatible prescan found the label (HTML §13.2.3.2).
    return encoding === 'utf-16le' || encoding === 'utf-16be' ? 'utf-8' : encoding;
  } catch {
    return null; // unknown label: fall through to the next source
  }
}

function bomEncoding(body: Uint8Array): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  return null;
}

/** The `charset` parameter of a Content-Type value, if any. */
export function contentTypeCharset(contentType: string | null | undefined): string | null {
  if (!contentType) return null;
  const match = /;\s*charset\s*=\s*("[^"]*"|[^;\s]*)/i.exec(contentType);
  return match?.[1] ? match[1].replace(/^"|"$/g, '') : null;
}

function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

function isHtmlLike(type: string): boolean {
  return type === '' || type === 'text/html' || type === 'application/xhtml+xml';
}

function isXmlLike(type: string): boolean {
  return type.endsWith('/xml') || type.endsWith('+xml');
}

/** Finds a charset declared by `<meta>` in an ASCII-compatible prefix of an HTML document. */
function metaCharset(head: string): string | null {
  // Comments may hide a stale declaration; drop them first.
  const text = head.replace(/<!--[\s\S]*?-->/g, '');
  for (const tag of text.matchAll(/<meta\b[^>]*>/gi)) {
    const attributes = tag[0];
    const direct = /\bcharset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)/i.exec(attributes);
    if (direct?.[1]) {
      // Either `<meta charset=x>` or `content="text/html; charset=x"`; for the latter the
      // standard also wants `http-equiv="content-type"`, but pages omit it and browsers forgive.
      return direct[1];
    }
  }
  return null;
}

export function detectCharset(
  body: Uint8Array,
  contentType: string | null | undefined,
): DetectedCharset {
  const bom = bomEncoding(body);
  if (bom) return { encoding: bom, source: 'bom' };
  const declared = resolveLabel(contentTypeCharset(contentType));
  if (declared) return { encoding: declared, source: 'content-type' };
  const type = mediaType(contentType);
  const head = Buffer.from(
    body.buffer,
    body.byteOffset,
    Math.min(body.byteLength, PRESCAN_BYTES),
  ).toString('latin1');
  if (isHtmlLike(type)) {
    const meta = resolveLabel(metaCharset(head));
    if (meta) return { encoding: meta, source: 'meta' };
  }
  if (isXmlLike(type) || type === '' || type === 'text/html') {
    const xml = /^<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head);
    const encoding = resolveLabel(xml?.[1]);
    if (encoding) return { encoding, source: 'xml-declaration' };
  }
  return { encoding: 'utf-8', source: 'default' };
}

/**
 * Decodes a body to text with the detected charset: the one decoder of every path that turns
 * fetched or stored bytes into text. Sequences invalid in the encoding become U+FFFD, never an
 * error; NUL characters are dropped, since no page means them and Postgres text cannot hold them.
 */
export function decodeBody(body: Uint8Array, contentType: string | null | undefined): string {
  const { encoding } = detectCharset(body, contentType);
  // TextDecoder strips a BOM matching its encoding by default.
  let text = new TextDecoder(encoding).decode(body);
  if (encoding === 'windows-1252') text = text.replace(/[\x80-\x9f]/g, windows1252Char);
  // Text holds U+0000 only where the bytes hold 0x00 (in UTF-16 too, whose NUL is two of them):
  // a byte search (memchr) costs well under a microsecond, where scanning a 30 KB page's text
  // took about 20.
  const mayHoldNul = Buffer.from(body.buffer, body.byteOffset, body.byteLength).indexOf(0) !== -1;
  return mayHoldNul && text.includes('\0') ? text.replaceAll('\0', '') : text;
}

/**
 * windows-1252's bytes 0x80–0x9F (€, curly quotes, dashes, …; WHATWG's index). Node 20's
 * TextDecoder decodes windows-1252, the label of `latin1` and `iso-8859-1` pages too, as
 * ISO-8859-1, turning them into C1 control characters; those map back here. The five bytes
 * windows-1252 leaves undefined stay as they are.
 */
const WINDOWS_1252_C1 =
  '\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f' +
  '\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178';

function windows1252Char(char: string): string {
  return WINDOWS_1252_C1[char.charCodeAt(0) - 0x80]!;
}
