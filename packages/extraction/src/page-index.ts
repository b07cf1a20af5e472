/**
 * One walk over a parsed page for the markup reader (dom-posting.ts, page-labels.ts): every
 * visible element in document order, which of them are page furniture, and text helpers that
 * skip what a reader never sees as text (SVG icons and their `<title>`, scripts, styles).
 *
 * JS predicates over this index, not CSS selectors: compiling selector lists
 * (`[class*="x" i], …`) for each query cost more than everything else on a typical page, ten
 * times a cheerio parse.
 */
import type { CheerioAPI } from 'cheerio/slim';
import { childElements, type DomElement } from './dom.js';
import { normaliseWhitespace } from './html-text.js';

type TreeNode = { type?: string; name?: string; data?: string; children?: TreeNode[] };
type Node = { parent?: unknown; type?: string; name?: string; nextSibling?: unknown };

/**
 * Elements whose content is never page text: an SVG icon's `<title>` ("save-icon") is a tooltip,
 * not a heading, and must not become a title or an employer.
 */
const INVISIBLE_TAGS = new Set(['svg', 'script', 'style', 'noscript', 'template', 'head']);

const BLOCK_BOUNDARY = new Set(['p', 'div', 'li', 'dd', 'dt', 'tr', 'h1', 'h2', 'h3', 'h4']);

export interface PageIndex {
  /** Every element outside SVG, script, style and head, in document order. */
  elements: DomElement[];
  /** Roots of page furniture: footers, navigation, site headers, cookie banners, "similar jobs". */
  furniture: Set<DomElement>;
  /** Side columns (`<aside>`, sidebars): not the posting's text, but often its facts. */
  sideColumns: Set<DomElement>;
  /** Every element inside the furniture, and every element inside a side column. */
  inFurniture: Set<DomElement>;
  inSideColumn: Set<DomElement>;
}

const FURNITURE_TAGS = new Set(['footer', 'nav']);
const FURNITURE_CLASS =
  /\bsite-header\b|similar|related|other-jobs|more-jobs|cookie|consent|gdpr|\bbreadcrumbs?\b|\bnavbar\b|\bfooter\b|\bmenu\b/i;
const SIDE_CLASS = /\bsidebar\b|\bside-?col/i;
/** Site headers of pages that predate `<header>`: `<div id="header">`, `.masthead`, `.topbar`. */
const HEADER_TOKEN =
  /(?:^|\s)(?:header|site-header|masthead|topbar|top-bar|top|navbar|hdr|kopf|entete|banner|global-nav|site-top)(?:\s|$)/i;

export function indexPage($: CheerioAPI): PageIndex {
  // A walk of the tree in document order; even `$('*')` costs a selector engine run.
  const elements: DomElement[] = [];
  const stack: DomElement[] = childElements($.root()[0] as unknown as DomElement).reverse();
  while (stack.length > 0) {
    const element = stack.pop() as DomElement;
    if (INVISIBLE_TAGS.has(element.name)) continue;
    elements.push(element);
    const children = childElements(element);
    for (let index = children.length - 1; index >= 0; index--)
      stack.push(children[index] as DomElement);
  }
  const furniture = new Set<DomElement>();
  const sideColumns = new Set<DomElement>();
  for (const element of elements) {
    if (element.name === 'aside' || SIDE_CLASS.test(element.attribs.class ?? '')) {
      sideColumns.add(element);
      continue;
    }
    const name = element.name;
    const isSiteHeader = name === 'header' && parentElement(element)?.name === 'body';
    const role = element.attribs.role;
    if (
      FURNITURE_TAGS.has(name) ||
      isSiteHeader ||
      role === 'banner' ||
      role === 'navigation' ||
      role === 'contentinfo' ||
      role === 'dialog' ||
      FURNITURE_CLASS.test(element.attribs.class ?? '') ||
      FURNITURE_CLASS.test(element.attribs.id ?? '') ||
      (name === 'div' &&
        HEADER_TOKEN.test(`${element.attribs.class ?? ''} ${element.attribs.id ?? ''}`) &&
        !holdsContentHeading(element))
    )
      furniture.add(element);
  }
  // Membership by inheritance, in document order (parents come before their children): a
  // lookup per element instead of a walk up the tree, which on a deep page costs its depth.
  const inFurniture = new Set<DomElement>();
  const inSideColumn = new Set<DomElement>();
  for (const element of elements) {
    const parent = parentElement(element);
    if (furniture.has(element) || (parent !== null && inFurniture.has(parent)))
      inFurniture.add(element);
    if (sideColumns.has(element) || (parent !== null && inSideColumn.has(parent)))
      inSideColumn.add(element);
  }
  return { elements, furniture, sideColumns, inFurniture, inSideColumn };
}

/** Elements holding the site's name: a logo, a site title, a navbar brand. */
export const SITE_NAME_HINT =
  /(?:^|[\s_-])(?:logo|site-?(?:title|titre|name|nom)|brand|navbar-brand|wordmark|marque|header__brand)(?:$|[\s_-])/i;

/**
 * Whether a header-like element holds a heading other than the site's name: ATS templates put
 * the posting's title, company and location in a `<div id="header">`.
 */
function holdsContentHeading(element: DomElement): boolean {
  const stack = childElements(element);
  for (let steps = 0; stack.length > 0 && steps < 500; steps++) {
    const child = stack.pop() as DomElement;
    if (/^h[1-3]$/.test(child.name) && !SITE_NAME_HINT.test(hintsOf(child))) return true;
    stack.push(...childElements(child));
  }
  return false;
}

/** Like cheerio's text(), without wrapping each node and without SVG, script or style text. */
export function textContent(node: TreeNode): string {
  if (node.type === 'text') return node.data ?? '';
  if (node.children === undefined || node.type === 'comment') return '';
  if (node.name !== undefined && INVISIBLE_TAGS.has(node.name)) return '';
  let text = '';
  for (const child of node.children) text += textContent(child);
  return text;
}

export function textOf(element: DomElement): string {
  return normaliseWhitespace(textContent(element));
}

/**
 * The element's text when it is at most `limit` characters before whitespace collapsing, else
 * null: a label or value never is long, and stopping early keeps the walk over every element of
 * a large page linear.
 */
export function shortTextOf(element: DomElement, limit: number): string | null {
  let text = '';
  const stack: TreeNode[] = [element];
  const maxSteps = limit * 4 + 64;
  // Nodes without text count too: a label is never a thousand nested elements deep.
  for (let steps = 0; stack.length > 0; steps++) {
    if (steps > maxSteps) return null;
    const node = stack.pop() as TreeNode;
    if (node.type === 'text') {
      text += node.data ?? '';
      if (text.length > limit * 3) return null;
      continue;
    }
    if (node.children === undefined || node.type === 'comment') continue;
    if (node.name !== undefined && INVISIBLE_TAGS.has(node.name)) continue;
    // <br> and block boundaries separate words: "<p>Hospital</p><p>Kingsmere</p>".
    if (node.name === 'br') text += ' ';
    else if (node.name !== undefined && BLOCK_BOUNDARY.has(node.name) && node !== element)
      text += ', ';
    // Children the remaining steps cannot reach are not pushed: the walk fails the same either
    // way, and a table of 70,000 rows cost 70,000 pushes under each of its 500 ancestors (6 s).
    const reachable = Math.min(node.children.length, maxSteps - steps + 2);
    for (let index = reachable - 1; index >= 0; index--)
      stack.push(node.children[index] as TreeNode);
  }
  let normalised = normaliseWhitespace(text);
  if (normalised.includes(','))
    normalised = normalised
      .replace(/^[\s,]+|[\s,]+$/g, '')
      .replace(/\s*,(?:\s*,)+/g, ',')
      .replace(/\s+,/g, ',');
  return normalised.length > limit ? null : normalised;
}

export function parentElement(element: DomElement): DomElement | null {
  const parent = (element as Node).parent as (DomElement & Node) | null | undefined;
  return parent !== null && parent !== undefined && 'attribs' in parent ? parent : null;
}

export function nextElementSibling(element: DomElement): DomElement | null {
  for (
    let node = (element as Node).nextSibling;
    node !== null && node !== undefined;
    node = (node as Node).nextSibling
  ) {
    if ((node as Node).type === 'tag') return node as DomElement;
    // Text between the two ("Location: <b>x</b> Berlin") means they are not a label/value pair.
    if ((node as Node).type === 'text' && ((node as TreeNode).data ?? '').trim() !== '')
      return null;
  }
  return null;
}

/** Whether `ancestor` contains `node`, by walking up from `node` (cheerio's find() scans down). */
export function contains(ancestor: unknown, node: unknown): boolean {
  for (
    let current = (node as Node | null)?.parent;
    current !== null && current !== undefined;
    current = (current as Node).parent
  ) {
    if (current === ancestor) return true;
  }
  return false;
}

/** Whether an element lies outside the page furniture and the side columns. */
export function isInMainContent(page: PageIndex, element: DomElement): boolean {
  return !page.inFurniture.has(element) && !page.inSideColumn.has(element);
}

/** Whether an element lies outside the page furniture (a side column counts as the page's). */
export function isOutsideFurniture(page: PageIndex, element: DomElement): boolean {
  return !page.inFurniture.has(element);
}

/**
 * class, id and the attributes templates name their parts with: data attributes of ATS and
 * React pages (whose class names are hashes), and itemprop used without an itemscope.
 */
export function hintsOf(element: DomElement): string {
  const attributes = element.attribs;
  return `${attributes.class ?? ''} ${attributes.id ?? ''} ${attributes['data-automation-id'] ?? ''} ${attributes['data-ui'] ?? ''} ${attributes['data-qa'] ?? ''} ${attributes['data-testid'] ?? ''} ${attributes['data-test'] ?? ''} ${attributes.itemprop ?? ''}`;
}
