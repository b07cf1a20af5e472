/**
 * The DOM fallback for pages without JSON-LD: reads a schema.org/JobPosting microdata item into
 * the same object shape JSON-LD has, so one mapping (`json-ld-mapping.ts`) serves both.
 *
 * Kept deliberately small: no `itemref`.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { childElements, type DomElement } from './dom.js';
import type { JsonObject } from './json-ld-mapping.js';

const JOB_POSTING_ITEMTYPE_SUFFIX = 'schema.org/JobPosting';
/** Nested items deeper than this (Place → PostalAddress → Country is 3) are not read. */
const MAX_ITEM_DEPTH = 8;

/** Elements whose microdata value is a URL attribute rather than their text (microdata spec). */
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

/** Whether the page may hold a microdata JobPosting; pages that never mention it skip the DOM. */
export function mayHaveMicrodataJobPosting(html: string): boolean {
  return html.includes(JOB_POSTING_ITEMTYPE_SUFFIX) && html.includes('itemscope');
}

/** The first JobPosting microdata item of the page as a JSON-LD-like object, or null. */
export function findMicrodataJobPosting($: CheerioAPI): JsonObject | null {
  const scope = $('[itemscope][itemtype]')
    .toArray()
    .find((element) =>
      (element.attribs.itemtype ?? '')
        .split(/\s+/)
        .some((type) => type.endsWith(JOB_POSTING_ITEMTYPE_SUFFIX)),
    );
  return scope === undefined ? null : readItem($, scope, 0);
}

function readItem($: CheerioAPI, scope: DomElement, depth: number): JsonObject {
  const types = (scope.attribs.itemtype ?? '').split(/\s+/).filter((type) => type !== '');
  const item: JsonObject = { '@type': types.length === 1 ? types[0] : types };
  collectProperties($, scope, item, depth);
  return item;
}

/**
 * Adds the properties owned by `scope`: descendants with `itemprop` whose nearest enclosing
 * `itemscope` is `scope`. A nested item becomes a nested object; its own properties stay inside.
 */
function collectProperties(
  $: CheerioAPI,
  parent: DomElement,
  item: JsonObject,
  depth: number,
): void {
  for (const child of childElements(parent)) {
    const names = child.attribs.itemprop;
    const isNestedItem = child.attribs.itemscope !== undefined;
    if (names !== undefined) {
      const nestedItem =
        isNestedItem && depth < MAX_ITEM_DEPTH ? readItem($, child, depth + 1) : null;
      for (const name of names.split(/\s+/)) {
        if (name === '') continue;
        addProperty(item, name, isNestedItem ? nestedItem : readPropertyValue($, child, name));
      }
    }
    if (!isNestedItem) collectProperties($, child, item, depth);
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

function readPropertyValue($: CheerioAPI, element: DomElement, name: string): string | null {
  const attributes = element.attribs;
  const tag = element.name.toLowerCase();
  if (tag === 'meta') return attributes.content ?? null;
  const urlAttribute = URL_VALUE_ATTRIBUTE[tag];
  if (urlAttribute !== undefined) return attributes[urlAttribute] ?? null;
  if (tag === 'data' || tag === 'meter') return attributes.value ?? null;
  if (tag === 'time' && attributes.datetime !== undefined) return attributes.datetime;
  // Descriptions keep their HTML, as JSON-LD descriptions do, so both paths yield the same kind
  // of value; everything else is text with whitespace collapsed.
  if (name === 'description') return $(element).html();
  return $(element).text().replace(/\s+/g, ' ');
}
