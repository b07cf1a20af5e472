/**
 * RDFa Lite's JobPosting (`vocab="https://schema.org/" typeof="JobPosting" property="title"`, or
 * with a `schema:` prefix) read into the JSON-LD shape, like microdata, so one mapping serves all
 * three. Covers what CMS themes emit: nested `typeof` items, `content`, `datetime` and link
 * values; not `rel`/`rev` chaining or `resource` references between items.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { childElements, type DomElement } from './dom.js';
import type { JsonObject } from './json-ld-mapping.js';

/** Nested items deeper than this (Place → PostalAddress → Country is 3) are not read. */
const MAX_ITEM_DEPTH = 8;

/** Elements whose RDFa value (without `content`) is a URL attribute. */
const URL_VALUE_ATTRIBUTE: Record<string, string> = {
  a: 'href',
  area: 'href',
  link: 'href',
  img: 'src',
  audio: 'src',
  video: 'src',
  source: 'src',
  iframe: 'src',
  embed: 'src',
  object: 'data',
};

const TYPEOF_JOB_POSTING = /\btypeof\s*=\s*["']?[^"'>]*JobPosting/i;

/** Whether the page may hold an RDFa JobPosting; other pages skip the DOM. */
export function mayHaveRdfaJobPosting(html: string): boolean {
  return TYPEOF_JOB_POSTING.test(html);
}

/** `schema:title`, `https://schema.org/title` or `title` → `title`. */
function localName(term: string): string {
  return term.slice(
    Math.max(term.lastIndexOf('/'), term.lastIndexOf(':'), term.lastIndexOf('#')) + 1,
  );
}

function typesOf(element: DomElement): string[] {
  return (element.attribs.typeof ?? '')
    .split(/\s+/)
    .filter((type) => type !== '')
    .map(localName);
}

/** The first RDFa JobPosting of the page as a JSON-LD-like object, or null. */
export function findRdfaJobPosting($: CheerioAPI): JsonObject | null {
  const scope = $('[typeof]')
    .toArray()
    .find((element) => typesOf(element).includes('JobPosting'));
  return scope === undefined ? null : readItem($, scope, 0);
}

function readItem($: CheerioAPI, scope: DomElement, depth: number): JsonObject {
  const types = typesOf(scope);
  const item: JsonObject = { '@type': types.length === 1 ? types[0] : types };
  collectProperties($, scope, item, depth);
  return item;
}

/**
 * Adds the properties owned by `scope`: descendants with `property` whose nearest enclosing
 * `typeof` is `scope`. An element with both `property` and `typeof` is a nested item.
 */
function collectProperties(
  $: CheerioAPI,
  parent: DomElement,
  item: JsonObject,
  depth: number,
): void {
  for (const child of childElements(parent)) {
    const names = child.attribs.property;
    const isNestedItem = child.attribs.typeof !== undefined;
    if (names !== undefined) {
      const nestedItem =
        isNestedItem && depth < MAX_ITEM_DEPTH ? readItem($, child, depth + 1) : null;
      for (const term of names.split(/\s+/)) {
        if (term === '') continue;
        const name = localName(term);
        addProperty(item, name, isNestedItem ? nestedItem : readPropertyValue($, child, name));
      }
    }
    if (!isNestedItem) collectProperties($, child, item, depth);
  }
}

function addProperty(item: JsonObject, name: string, value: unknown): void {
  if (value === null) return;
  const existing = item[name];
  if (existing === undefined) item[name] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else item[name] = [existing, value];
}

function readPropertyValue($: CheerioAPI, element: DomElement, name: string): string | null {
  const attributes = element.attribs;
  if (attributes.content !== undefined) return attributes.content;
  if (attributes.datetime !== undefined) return attributes.datetime;
  const urlAttribute = URL_VALUE_ATTRIBUTE[element.name.toLowerCase()];
  if (urlAttribute !== undefined && attributes[urlAttribute] !== undefined)
    return attributes[urlAttribute];
  if (name === 'description') return $(element).html();
  return $(element).text().replace(/\s+/g, ' ');
}
