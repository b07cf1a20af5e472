/**
 * One page parsed for the template code: its units and its head's labels. Pages the parser
 * cannot read, or that are larger than the markup reader reads, are left out (null).
 */
import type { CheerioAPI } from 'cheerio/slim';
import { createLazyDom } from '../dom.js';
import { MAX_DOM_POSTING_CHARS } from '../dom-posting.js';
import { indexPage, type PageIndex } from '../page-index.js';
import { readPageMeta, type PageMeta } from '../page-meta.js';
import { readUnits, type TextUnit } from './units.js';

export interface TemplatePage {
  $: CheerioAPI;
  /** The markup reader's index of the page, built once for both. */
  index: PageIndex;
  units: TextUnit[];
  meta: PageMeta;
}

export function parseTemplatePage(html: string, $?: CheerioAPI): TemplatePage | null {
  if (typeof html !== 'string' || html.length > MAX_DOM_POSTING_CHARS) return null;
  try {
    const dom = $ ?? createLazyDom(html)();
    const index = indexPage(dom);
    return { $: dom, index, units: readUnits(dom, index), meta: readPageMeta(html) };
  } catch {
    // A page the parser chokes on teaches nothing about the site; the others still do.
    return null;
  }
}
