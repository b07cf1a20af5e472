/**
 * A page as the template code sees it: its visible text in document order, cut into units (a
 * heading, a table cell, a paragraph's run of inline text, the value after a "Location:" label),
 * each keyed by its place in the markup. Pages of one template share keys; what they share at a
 * key (and in text) is the template, what differs is the record.
 *
 * A key is the path of tag names from the root, each with its stable class and id tokens
 * ("div.job-header"), hashed. Positions among siblings are left out, and so are tokens with
 * digits, hash-like tokens and state tokens ("odd", "active"): they differ between pages of one
 * template (a longer description shifts every index after it; `css-1x2y3z` changes per build).
 */
import type { CheerioAPI } from 'cheerio/slim';
import { childElements, type DomElement } from '../dom.js';
import { normaliseWhitespace } from '../html-text.js';
import { indexPage, parentElement, SITE_NAME_HINT, type PageIndex } from '../page-index.js';
import { findEmploymentType } from '../employment-type.js';
import { isRemoteText } from '../location.js';
import { labelKey, labelledPairs, type LabelKey } from '../page-labels.js';

export interface TextUnit {
  /** Hashed path of the unit's element; a labelled value's key also names its label's field. */
  key: string;
  /** Whitespace-collapsed text, at most MAX_UNIT_CHARS. */
  text: string;
  /** The key and the text compared across pages (lower case), hashed: the unit as a constant. */
  id: string;
  /** The element's tag name. */
  tag: string;
  /** Class and id tokens of the element and its parent, for hints ("job-title", "location"). */
  hints: string;
  /** A heading: `<h1>`–`<h4>`, or an element marked up as one. */
  headingLevel: number | null;
  /** Inside the page furniture (header, nav, footer, cookie banner): site chrome. */
  isChrome: boolean;
  /** Inside a logo, site title or navbar brand. */
  isBrand: boolean;
  /** The field a label unit names ("Location:"), or that the label before a value named. */
  label: LabelKey | null;
  /** Whether this unit is a label ("Location:") rather than a value. */
  isLabel: boolean;
  /** The unit's element, while the page is parsed (not stored in a template). */
  element: DomElement;
}

/** Longer text is cut: a unit this long is description, whose exact text matters only as a whole. */
export const MAX_UNIT_CHARS = 2000;
/** Units read per page: a 100 KB posting has a few hundred; a hostile page stops here. */
export const MAX_UNITS = 6000;

const SKIPPED_TAGS = new Set([
  'script',
  'style',
  'svg',
  'noscript',
  'template',
  'head',
  'select',
  'option',
  'textarea',
  'iframe',
  'object',
  'canvas',
]);

// prettier-ignore
const INLINE_TAGS = new Set([
  'a', 'abbr', 'b', 'big', 'cite', 'code', 'em', 'font', 'i', 'label', 'mark', 'q', 's', 'small',
  'span', 'strong', 'sub', 'sup', 'time', 'u', 'tt', 'nobr', 'wbr', 'img', 'bdi', 'bdo', 'data',
  'dfn', 'kbd', 'samp', 'var', 'ins', 'del', 'strike', 'blink',
]);

const STATE_TOKENS =
  /^(?:odd|even|alt|first|last|active|current|selected|open|closed|hidden|visible|show|hide|in|on|off|clearfix|clear|row-?(?:odd|even)|is-.*|has-.*|js-.*|ng-.*|new|featured|highlight(?:ed)?|expanded|collapsed)$/i;
/** Tokens that builds generate: CSS-in-JS classes, framework scopes. */
const GENERATED_TOKEN =
  /^(?:css|sc|jsx|svelte|emotion|styled|makestyles|mui|chakra|tw|ember|vue|data-v)-|^_|__[a-z0-9]{4,}$/;

/**
 * The class or id token of an element that is the same on every page of a template: the first
 * usable one in the order written. The block's own name comes first; what follows it varies
 * between pages of one template ("title-container title-containerEji" on a page with a logo),
 * and "--modifiers", states and per-build hashes are never used.
 */
const NO_TOKENS: readonly string[] = [];

function stableTokens(attribute: string | undefined): readonly string[] {
  if (attribute === undefined || attribute === '') return NO_TOKENS;
  const tokens: string[] = [];
  for (const token of attribute.split(/\s+/)) {
    if (token.length < 2 || token.length > 60 || token.includes('--')) continue;
    if (/\d/.test(token) || STATE_TOKENS.test(token) || GENERATED_TOKEN.test(token)) continue;
    if (!/^[a-z][a-z_-]*$/i.test(token)) continue;
    tokens.push(token.toLowerCase());
    break;
  }
  return tokens;
}

/** FNV-1a over a string, continuing from `seed`: a path key without building the path string. */
function hashStep(seed: number, text: string): number {
  let hash = seed;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

const ROOT_HASH = 0x811c9dc5;
const HAS_WORD = /[\p{L}\p{N}]/u;

function headingLevelOf(element: DomElement): number | null {
  const match = /^h([1-6])$/.exec(element.name);
  if (match !== null) return Number(match[1]);
  if (element.attribs.role === 'heading') return Number(element.attribs['aria-level'] ?? 2) || 2;
  return null;
}

function isInline(element: DomElement): boolean {
  if (!INLINE_TAGS.has(element.name)) return false;
  // <a><div>…</div></a>: a link wrapping blocks is a block.
  return childElements(element).every(
    (child) => INLINE_TAGS.has(child.name) || child.name === 'br',
  );
}

/** Text of an inline element, bounded (a hostile page nests thousands of spans). */
function inlineText(element: DomElement, budget: { steps: number }): string {
  let text = '';
  const stack: unknown[] = [element];
  while (stack.length > 0 && budget.steps-- > 0) {
    const node = stack.pop() as {
      type?: string;
      data?: string;
      name?: string;
      children?: unknown[];
    };
    if (node.type === 'text') text += node.data ?? '';
    else if (node.name === 'br') text += ' ';
    else if (node.children !== undefined && node.type !== 'comment') {
      if (node.name !== undefined && SKIPPED_TAGS.has(node.name)) continue;
      for (let index = node.children.length - 1; index >= 0; index--)
        stack.push(node.children[index]);
    }
    if (text.length > MAX_UNIT_CHARS * 2) break;
  }
  return text;
}

/**
 * A key is the element's segment, its parent's tag name and the segments of its nearest
 * NAMED_ANCESTORS ancestors that have a class or id: a page variant that wraps the record in one
 * more `<div>` (a board's page with and without the company's logo) keeps its keys.
 */
const NAMED_ANCESTORS = 1;

interface Frame {
  element: DomElement;
  /** Segments of the nearest named ancestors, this element included when it is named. */
  named: string[];
  hash: number;
  hints: string;
  ownHints: string;
  isChrome: boolean;
  isBrand: boolean;
  /** Inside a table cell under a header cell that names a field ("Location"). */
  column: LabelKey | null;
}

/**
 * The field a unit's text labels. "Remote" or "Contract" alone is a value more often than a
 * label (a badge, a cell): without a colon, such a word is read as the value.
 */
function unitLabel(text: string): LabelKey | null {
  const label = labelKey(text);
  if (label === null || /[:：]\s*$/.test(text)) return label;
  if (label === 'workplace' && isRemoteText(text)) return null;
  if (label === 'employmentType' && findEmploymentType(text) !== null) return null;
  return label;
}

/** The cells of a table row, in order. */
function cellsOf(row: DomElement): DomElement[] {
  return childElements(row).filter((cell) => cell.name === 'td' || cell.name === 'th');
}

/** The table a row belongs to (through its `<tbody>` or `<thead>`). */
function tableOf(row: DomElement): DomElement | null {
  for (
    let node = parentElement(row), depth = 0;
    node !== null && depth < 3;
    node = parentElement(node), depth++
  )
    if (node.name === 'table') return node;
  return null;
}

/**
 * The page's text units in document order. Never throws on odd markup: what it cannot read, it
 * leaves out.
 */
export function readUnits($: CheerioAPI, page: PageIndex = indexPage($)): TextUnit[] {
  const units: TextUnit[] = [];
  const budget = { steps: 400_000 };
  const root = $.root()[0] as unknown as DomElement;
  const stack: (Frame | RunItem)[] = childElements(root)
    .reverse()
    .map((element) => ({
      element,
      named: [],
      hash: ROOT_HASH,
      hints: '',
      ownHints: '',
      isChrome: false,
      isBrand: false,
      column: null,
    }));
  /** A table's header labels by column: "Post | Education | Location | Age" above its rows. */
  const headers = new Map<DomElement, (LabelKey | null)[]>();

  // One object literal per unit, every field at once: spreading a shared base and adding the id
  // afterwards cost a third of the walk on a 100 KB page.
  const add = (
    frame: Frame,
    key: string,
    text: string,
    label: LabelKey | null,
    isLabel: boolean,
  ): void => {
    // Long texts are description, compared as written: lower-casing them is not worth it.
    const compared = text.length <= 200 ? text.toLowerCase() : text;
    units.push({
      key,
      text,
      id: `${key}:${hashStep(ROOT_HASH, compared).toString(36)}`,
      tag: frame.element.name,
      hints: frame.hints,
      headingLevel: headingLevelOf(frame.element),
      isChrome: frame.isChrome,
      isBrand: frame.isBrand,
      label,
      isLabel,
      element: frame.element,
    });
  };
  const push = (frame: Frame, raw: string, hash: number): void => {
    // "· Chaudière-Appalaches": a separator before a value in a line of facts is decoration.
    const text = normaliseWhitespace(raw)
      .replace(/^[·•|–—-]\s+/, '')
      .slice(0, MAX_UNIT_CHARS);
    if (text === '' || !HAS_WORD.test(text)) return;
    const key = hash.toString(36);
    const label = text.length <= 40 ? unitLabel(text) : null;
    if (frame.column !== null && label === null) {
      // The value in a column headed "Location": keyed by its column, wherever the row is.
      add(frame, hashStep(hash, `@column:${frame.column}`).toString(36), text, frame.column, false);
      return;
    }
    if (label !== null) {
      add(frame, key, text, label, true);
      return;
    }
    // "Location: Lisbon Type: Full-time" in one run: each label, then its value under a key of
    // its own (the same label's value sits at the same key on every page).
    const pairs = text.length <= 400 && /[:：]/.test(text) ? labelledPairs(text) : [];
    if (pairs.length > 0) {
      let rest = text;
      for (const [field, value] of pairs) {
        const cleaned = value.replace(/^[\s:|·•,-]+|[\s|·•,;]+$/g, '');
        const at = rest.indexOf(value);
        const labelText = at > 0 ? rest.slice(0, at).trim() : field;
        rest = at >= 0 ? rest.slice(at + value.length) : rest;
        add(frame, key, labelText, field, true);
        if (cleaned !== '')
          add(frame, hashStep(hash, `@${field}`).toString(36), cleaned, field, false);
      }
      return;
    }
    add(frame, key, text, null, false);
  };

  while (stack.length > 0 && units.length < MAX_UNITS && budget.steps > 0) {
    const item = stack.pop() as Frame | RunItem;
    budget.steps--;
    if ('run' in item) {
      push(item.frame, item.run, item.frame.hash);
      continue;
    }
    // The element's content as runs of inline text (up to the next block or <br>) and block
    // children, pushed in reverse so that they come off the stack in document order.
    const items: (Frame | RunItem)[] = [];
    let run = '';
    const endRun = (): void => {
      if (run.trim() !== '') items.push({ frame: item, run });
      run = '';
    };
    // A row of header cells names the columns of the rows below it; a cell of those rows is
    // labelled by its column.
    let columns: (LabelKey | null)[] | null = null;
    const cells = item.element.name === 'tr' ? cellsOf(item.element) : [];
    if (item.element.name === 'tr') {
      const table = tableOf(item.element);
      if (table !== null && cells.length >= 2 && cells.every((cell) => cell.name === 'th'))
        headers.set(
          table,
          cells.map((cell) => labelKey(normaliseWhitespace(inlineText(cell, budget)))),
        );
      else if (table !== null) columns = headers.get(table) ?? null;
    }
    for (const child of (item.element.children ?? []) as unknown as {
      type?: string;
      data?: string;
    }[]) {
      if (child.type === 'text') {
        run += child.data ?? '';
        continue;
      }
      if (child.type !== 'tag') continue;
      const childElement = child as unknown as DomElement;
      if (SKIPPED_TAGS.has(childElement.name)) continue;
      if (childElement.name === 'br' || childElement.name === 'hr') {
        endRun();
        continue;
      }
      const classTokens = stableTokens(childElement.attribs.class);
      const idTokens = stableTokens(childElement.attribs.id);
      const tokens =
        idTokens.length === 0
          ? classTokens
          : [...classTokens, ...idTokens.map((token) => `#${token}`)];
      // An unnamed inline element (<b>, <a>, <font>) is part of the run; one named for what it
      // holds (<span class="location">) is a unit of its own.
      if (tokens.length === 0 && isInline(childElement)) {
        run += inlineText(childElement, budget);
        continue;
      }
      endRun();
      const segment = `${childElement.name}${tokens.map((token) => `.${token}`).join('')}`;
      const key = `${item.named.join('>')}>${item.element.name}>${segment}`;
      const ownHints = tokens.join(' ');
      items.push({
        element: childElement,
        named:
          tokens.length > 0
            ? [...item.named.slice(item.named.length + 1 - NAMED_ANCESTORS), segment]
            : item.named,
        hash: hashStep(ROOT_HASH, key),
        // Its own tokens and its parent's (a value's <span> inside <div class="location">).
        hints: ownHints === '' ? item.ownHints : `${ownHints} ${item.ownHints}`,
        ownHints,
        isChrome: item.isChrome || page.inFurniture.has(childElement),
        isBrand: item.isBrand || (ownHints !== '' && SITE_NAME_HINT.test(ownHints)),
        column: columns === null ? item.column : (columns[cells.indexOf(childElement)] ?? null),
      });
    }
    endRun();
    for (let index = items.length - 1; index >= 0; index--)
      stack.push(items[index] as Frame | RunItem);
  }
  return units;
}

interface RunItem {
  frame: Frame;
  run: string;
}

const PREFIX_LABEL = /^(\p{L}[\p{L}'’. ]{0,28}?)\s*[:：]\s+(\S.{0,200})$/u;

/**
 * "Miesto: Bratislava", "Arbeitszeit: Vollzeit": a label in any language as the first one to
 * three words of a unit, lower-cased; null when the unit has none. Whether it is the template's
 * label or a line that happens to hold a colon, the site's pages tell (see splitPrefixes).
 */
export function prefixOf(unit: TextUnit): string | null {
  return prefixMatch(unit)?.label.toLowerCase() ?? null;
}

/** A unit's label of one to three words and the value after it, as written; null when none. */
function prefixMatch(unit: TextUnit): { label: string; value: string } | null {
  if (unit.isLabel || unit.headingLevel !== null || unit.text.length > 240) return null;
  const [, label, value] = PREFIX_LABEL.exec(unit.text) ?? [];
  if (label === undefined || value === undefined || label.split(' ').length > 3) return null;
  return { label, value };
}

/** Units whose prefix is one of the template's labels, split into the label and its value. */
export function splitPrefixes(units: readonly TextUnit[], labels: ReadonlySet<string>): TextUnit[] {
  if (labels.size === 0) return [...units];
  const split: TextUnit[] = [];
  for (const unit of units) {
    const match = prefixMatch(unit);
    const prefix = match?.label.toLowerCase();
    if (match === null || prefix === undefined || !labels.has(prefix)) {
      split.push(unit);
      continue;
    }
    const { value } = match;
    const labelText = `${match.label}:`;
    split.push({
      ...unit,
      text: labelText,
      id: `${unit.key}:${hashStep(ROOT_HASH, labelText.toLowerCase()).toString(36)}`,
      isLabel: true,
    });
    const key = hashStep(ROOT_HASH, `${unit.key}@${prefix}`).toString(36);
    split.push({
      ...unit,
      key,
      text: value,
      id: `${key}:${hashStep(ROOT_HASH, value.toLowerCase()).toString(36)}`,
    });
  }
  return split;
}

/**
 * Where a value sits inside a unit whose inline elements share one line (`<span class="m1">
 * Payments</span> <span class="m2">Initech</span>`): the element's tag and class attribute as
 * written (digits included: inside one unit they are the template's, not positions), and which
 * of the unit's inline elements with that selector it is.
 */
export interface InnerPart {
  selector: string;
  nth: number;
}

function selectorOf(element: DomElement): string {
  const className = (element.attribs.class ?? '').trim().split(/\s+/).sort().join('.');
  return className === '' ? element.name : `${element.name}.${className}`;
}

/** The unit element's inline descendants in document order (not those inside its blocks). */
function inlineDescendants(element: DomElement): DomElement[] {
  const found: DomElement[] = [];
  const stack = childElements(element).reverse();
  while (stack.length > 0 && found.length < 200) {
    const child = stack.pop() as DomElement;
    if (!INLINE_TAGS.has(child.name)) continue;
    found.push(child);
    stack.push(...childElements(child).reverse());
  }
  return found;
}

/** The inline element of the unit whose text is `wanted` (as compared), or null. */
export function findInnerPart(unit: TextUnit, wanted: string): InnerPart | null {
  const elements = inlineDescendants(unit.element);
  const budget = { steps: 20_000 };
  for (const element of elements) {
    const text = normaliseWhitespace(inlineText(element, budget)).toLowerCase();
    if (text !== wanted) continue;
    const selector = selectorOf(element);
    const nth = elements.filter((other) => selectorOf(other) === selector).indexOf(element);
    return { selector, nth };
  }
  return null;
}

/** The text of a unit's inline element an InnerPart names, or null. */
export function innerPartText(unit: TextUnit, inner: InnerPart): string | null {
  const element = inlineDescendants(unit.element).filter(
    (candidate) => selectorOf(candidate) === inner.selector,
  )[inner.nth];
  if (element === undefined) return null;
  const text = normaliseWhitespace(inlineText(element, { steps: 20_000 }));
  return text === '' ? null : text;
}
