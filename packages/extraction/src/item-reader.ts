/**
 * The DOM fallbacks for pages without JSON-LD: a schema.org JobPosting written into HTML
 * attributes, as microdata or as RDFa Lite, read into the object shape JSON-LD has, so one
 * mapping (`json-ld-mapping.ts`) serves all three. Both syntaxes nest the same way (an element
 * that opens an item owns the properties below it up to the next item), so one reader serves
 * both, told by an `ItemSyntax` which attributes to read.
 *
 * Kept deliberately small: no microdata `itemref`, no RDFa `rel`/`rev` chaining or `resource`
 * references between items.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { childElements, type DomElement } from './dom.js';
import type { JsonObject } from './json-ld-mapping.js';
import type { FieldSource } from './types.js';

/** How one syntax writes items into attributes. */
export interface ItemSyntax {
  source: FieldSource;
  /** Present on every element that opens an item, nested items included. */
  item: string;
  /** The item's types, space-separated. */
  types: string;
  /** The names of the properties an element's value belongs to, space-separated. */
  property: string;
  /** A type or property name as written in `types` / `property`, as the item stores it. */
  term: (written: string) => string;
  isJobPostingType: (type: string) => boolean;
  /**
   * What an element's attributes make its value: a string, null for no value (the property is
   * left out), or undefined when the value is the element's content.
   */
  attributeValue: (tag: string, attributes: Record<string, string>) => string | null | undefined;
}

/** Elements whose value is a URL attribute rather than their text (microdata spec, RDFa alike). */
const URL_VALUE_ATTRIBUTE: Record<string, string> = {
  a: 'href',
  area: 'href',
  link: 'href',
  audio: 'src',
  embed: 'src',
  iframe: 'src',
  img: 'src',
  source: 'src',
  track: 'src',
  video: 'src',
  object: 'data',
};

/** `itemscope itemtype="https://schema.org/JobPosting"`, `itemprop="title"`. */
export const MICRODATA: ItemSyntax = {
  source: 'microdata',
  item: 'itemscope',
  types: 'itemtype',
  property: 'itemprop',
  term: (written) => written,
  isJobPostingType: (type) => type.endsWith('schema.org/JobPosting'),
  // The elements the microdata spec gives a value of their own have no other, even when the
  // attribute is missing; `time` falls back to its text.
  attributeValue: (tag, attributes) => {
    const valueAttribute =
      tag === 'meta'
        ? 'content'
        : tag === 'data' || tag === 'meter'
          ? 'value'
          : URL_VALUE_ATTRIBUTE[tag];
    if (valueAttribute !== undefined) return attributes[valueAttribute] ?? null;
    return tag === 'time' ? attributes.datetime : undefined;
  },
};

/**
 * `vocab="https://schema.org/" typeof="JobPosting"`, `property="title"`, or with a `schema:`
 * prefix: what CMS themes emit. `content` and `datetime` hold the value on any element.
 */
export const RDFA: ItemSyntax = {
  source: 'rdfa',
  item: 'typeof',
  types: 'typeof',
  property: 'property',
  term: localName,
  isJobPostingType: (type) => type === 'JobPosting',
  attributeValue: (tag, attributes) => {
    const urlAttribute = URL_VALUE_ATTRIBUTE[tag];
    return (
      attributes.content ??
      attributes.datetime ??
      (urlAttribute === undefined ? undefined : attributes[urlAttribute])
    );
  },
};

/** `schema:title`, `https://schema.org/title` or `title` → `title`. */
function localName(term: string): string {
  return term.slice(
    Math.max(term.lastIndexOf('/'), term.lastIndexOf(':'), term.lastIndexOf('#')) + 1,
  );
}

/** Nested items deeper than this (Place → PostalAddress → Country is 3) are not read. */
const MAX_ITEM_DEPTH = 8;

/**
 * Whether the page may hold a JobPosting item (a `types` attribute naming one); other pages
 * skip the DOM.
 */
export function mayHaveJobPostingItem(html: string, syntax: ItemSyntax): boolean {
  // As `\btypes\s*=\s*["']?[^"'>]*JobPosting` (case-insensitive) would answer, without its
  // quadratic retries: that pattern scans a value to its end from every `types=` inside it. Here
  // the value's end and the next mention are found once and reused by every later `types=`
  // before them.
  const attribute = new RegExp(String.raw`\b${syntax.types}\s*=\s*["']?`, 'gi');
  const valueEnd = /["'>]/g;
  const jobPosting = /JobPosting/gi;
  let end = -1;
  let mention = -1;
  for (let match = attribute.exec(html); match !== null; match = attribute.exec(html)) {
    const start = attribute.lastIndex;
    if (end < start) {
      valueEnd.lastIndex = start;
      end = valueEnd.exec(html)?.index ?? html.length;
    }
    if (mention < start) {
      jobPosting.lastIndex = start;
      mention = jobPosting.exec(html)?.index ?? html.length;
      if (mention === html.length) return false; // no mention after here, so none after later ones
    }
    if (mention + 'JobPosting'.length <= end) return true;
  }
  return false;
}

/** The first JobPosting item of the page as a JSON-LD-like object, or null. */
export function findJobPostingItem($: CheerioAPI, syntax: ItemSyntax): JsonObject | null {
  // An attribute selector matches elements only (cheerio infers that for literal selectors).
  const scope = $<DomElement, string>(`[${syntax.item}][${syntax.types}]`)
    .toArray()
    .find((element) => typesOf(element, syntax).some(syntax.isJobPostingType));
  return scope === undefined ? null : readItem($, scope, syntax, 0);
}

function typesOf(element: DomElement, syntax: ItemSyntax): string[] {
  return (element.attribs[syntax.types] ?? '')
    .split(/\s+/)
    .filter((type) => type !== '')
    .map(syntax.term);
}

function readItem($: CheerioAPI, scope: DomElement, syntax: ItemSyntax, depth: number): JsonObject {
  const types = typesOf(scope, syntax);
  const item: JsonObject = { '@type': types.length === 1 ? types[0] : types };
  collectProperties($, scope, syntax, item, depth);
  return item;
}

/**
 * Adds the properties owned by `scope`: descendants with a `property` attribute whose nearest
 * enclosing item is `scope`. A nested item becomes a nested object; its own properties stay
 * inside.
 */
function collectProperties(
  $: CheerioAPI,
  parent: DomElement,
  syntax: ItemSyntax,
  item: JsonObject,
  depth: number,
): void {
  for (const child of childElements(parent)) {
    const names = child.attribs[syntax.property];
    const isNestedItem = child.attribs[syntax.item] !== undefined;
    if (names !== undefined) {
      const nestedItem =
        isNestedItem && depth < MAX_ITEM_DEPTH ? readItem($, child, syntax, depth + 1) : null;
      for (const written of names.split(/\s+/)) {
        if (written === '') continue;
        const name = syntax.term(written);
        addProperty(
          item,
          name,
          isNestedItem ? nestedItem : readPropertyValue($, child, syntax, name),
        );
      }
    }
    if (!isNestedItem) collectProperties($, child, syntax, item, depth);
  }
}

/** A repeated property becomes an array, as in the microdata-to-JSON conversion. */
function addProperty(item: JsonObject, name: string, value: unknown): void {
  if (value === null) return;
  const existing = item[name];
  if (existing === undefined) item[name] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else item[name] = [existing, value];
}

function readPropertyValue(
  $: CheerioAPI,
  element: DomElement,
  syntax: ItemSyntax,
  name: string,
): string | null {
  const value = syntax.attributeValue(element.name.toLowerCase(), element.attribs);
  if (value !== undefined) return value;
  // Descriptions keep their HTML, as JSON-LD descriptions do, so every path yields the same kind
  // of value; everything else is text with whitespace collapsed.
  if (name === 'description') return $(element).html();
  return $(element).text().replace(/\s+/g, ' ');
}
