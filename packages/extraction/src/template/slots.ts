/**
 * Units aligned across pages. A constant is a unit whose text is the same at the same key on
 * most pages ("Job Overview", "Location:", the footer). A variable unit is identified by its slot:
 * its key, the last constant before it (its anchor) and how many variable units with that key
 * came between them. The anchor tells apart the many `<td>`s of a table layout ("the cell after
 * 'Location:'") without positions, which a longer description on one page would shift.
 */
import type { TextUnit } from './units.js';

/** Text as compared across pages and with labels: whitespace collapsed, lower case. */
export function comparableText(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** A unit's identity as a possible constant: its key and its text. */
export function constantId(unit: TextUnit): string {
  return unit.id;
}

export interface AlignedUnit {
  unit: TextUnit;
  constantId: string;
  /** Whether the unit is one of the template's constants. */
  isConstant: boolean;
  /** The slot of a variable unit; for a constant, the slot it would have been (for demotion). */
  slot: string;
  /** The constant before it, or null. */
  anchor: string | null;
}

/** Each unit with its constant id and slot, given which constant ids are the template's. */
export function alignUnits(
  units: readonly TextUnit[],
  isConstant: (id: string) => boolean,
): AlignedUnit[] {
  const aligned: AlignedUnit[] = [];
  let anchor: string | null = null;
  let counts = new Map<string, number>();
  for (const unit of units) {
    const id = constantId(unit);
    const nth = counts.get(unit.key) ?? 0;
    const slot = `${anchor ?? '^'}/${unit.key}/${nth}`;
    const constant = isConstant(id);
    aligned.push({ unit, constantId: id, isConstant: constant, slot, anchor });
    if (constant) {
      anchor = id;
      counts = new Map();
    } else counts.set(unit.key, nth + 1);
  }
  return aligned;
}
