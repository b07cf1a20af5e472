/**
 * The parsed page, built at most once per extraction and only when a path needs it (microdata,
 * RDFa, the DOM heuristics): parsing costs more than everything else we do with a page.
 */
import { load, type CheerioAPI } from 'cheerio/slim';
import { boundNesting } from './bound-nesting.js';

/** A DOM element as cheerio hands it out (domhandler's Element, which we do not depend on). */
export type DomElement = ReturnType<ReturnType<CheerioAPI['root']>['children']>[number];

export type LazyDom = () => CheerioAPI;

/** The page's DOM, its elements nested at most 512 deep (see bound-nesting.ts). */
export function createLazyDom(html: string): LazyDom {
  let $: CheerioAPI | undefined;
  return () => ($ ??= load(boundNesting(html)));
}

/** An element's child elements, without wrapping them in Cheerio objects (hot in tree walks). */
export function childElements(element: DomElement): DomElement[] {
  return (element.children as unknown[]).filter(
    (child): child is DomElement =>
      typeof child === 'object' && child !== null && 'attribs' in child,
  );
}
