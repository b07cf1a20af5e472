/**
 * Paths: where a field's value sits on an aligned page of a template, and the text a path finds
 * there.
 */
import type { PageMeta } from '../page-meta.js';
import { comparableText, type AlignedUnit } from './slots.js';
import type { TemplatePath } from './types.js';
import { innerPartText } from './units.js';
import { splitParts } from './values.js';

export function pathOf(
  slot: { slot: string; key: string; part: number | null; at: Map<number, number> },
  pages: readonly { aligned: AlignedUnit[]; meta: PageMeta }[],
  count: number,
  source: TemplatePath['source'],
): TemplatePath {
  let unique = 0;
  let inPageTitle = 0;
  let titled = 0;
  for (const [pageIndex, unitIndex] of slot.at) {
    const page = pages[pageIndex];
    if (page === undefined) continue;
    const text = page.aligned[unitIndex]?.unit.text ?? '';
    const value = slot.part === null ? text : (splitParts(text)[slot.part] ?? '');
    if (hasPageTitle(page.meta)) titled++;
    if (isInPageTitle(value, page.meta)) inPageTitle++;
    let atKey = 0;
    for (const item of page.aligned) if (!item.isConstant && item.unit.key === slot.key) atKey++;
    if (atKey === 1) unique++;
  }
  return {
    slot: slot.slot,
    key: slot.key,
    part: slot.part,
    isKeyUnique: unique >= slot.at.size * 0.8,
    source,
    isOptional: slot.at.size < count * 0.8,
    isInPageTitle: titled > 0 && inPageTitle >= titled * 0.6,
  };
}

/** Whether the page has a title of its own to check a value against. */
export function hasPageTitle(meta: PageMeta, shared: readonly string[] = []): boolean {
  if (meta.title === null && meta.ogTitle === null) return false;
  return !shared.includes(comparableText(`${meta.title ?? ''} | ${meta.ogTitle ?? ''}`));
}

/**
 * Whether a value is in the page's `<title>` or og:title, or most of its words are ("ETL /
 * Datawarehouse specialist" under the title "Datawarehouse specialist").
 */
export function isInPageTitle(value: string, meta: PageMeta): boolean {
  const lower = comparableText(value);
  if (lower.length < 2) return false;
  const pageTitle = comparableText(`${meta.title ?? ''} | ${meta.ogTitle ?? ''}`);
  if (pageTitle.includes(lower)) return true;
  const words = lower.match(/[\p{L}\p{N}]{3,}/gu) ?? [];
  const found = words.filter((word) => pageTitle.includes(word)).length;
  return words.length > 0 && found / words.length >= 0.5;
}

/** The text a path finds on an aligned page, or null. */
export function valueAt(
  page: { aligned: readonly AlignedUnit[] },
  path: TemplatePath,
): string | null {
  let found: AlignedUnit | null = null;
  let byKey: AlignedUnit | null = null;
  for (const item of page.aligned) {
    if (item.isConstant) continue;
    if (item.slot === path.slot) {
      found = item;
      break;
    }
    if (path.isKeyUnique && byKey === null && item.unit.key === path.key) byKey = item;
  }
  const unit = (found ?? byKey)?.unit;
  if (unit !== undefined && path.inner !== undefined) return innerPartText(unit, path.inner);
  const text = unit?.text ?? null;
  if (text === null || path.part === null) return text;
  return splitParts(text)[path.part] ?? null;
}
