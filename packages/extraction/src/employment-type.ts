/**
 * Employment types as schema.org names them: FULL_TIME, PART_TIME, CONTRACTOR, TEMPORARY,
 * INTERN, VOLUNTEER, PER_DIEM, OTHER. Sites write "Full-time", "full time", "Contract",
 * "Vollzeit" or put several in one string ("Full-time / Contract").
 */

/** Keys are lower-cased with runs of space, "-" and "_" collapsed to one space. */
const SYNONYMS: Record<string, string> = {
  'full time': 'FULL_TIME',
  fulltime: 'FULL_TIME',
  ft: 'FULL_TIME',
  'full time permanent': 'FULL_TIME',
  'permanent full time': 'FULL_TIME',
  'regular full time': 'FULL_TIME',
  vollzeit: 'FULL_TIME',
  'temps plein': 'FULL_TIME',
  'tiempo completo': 'FULL_TIME',
  'part time': 'PART_TIME',
  parttime: 'PART_TIME',
  pt: 'PART_TIME',
  teilzeit: 'PART_TIME',
  'temps partiel': 'PART_TIME',
  'medio tiempo': 'PART_TIME',
  contract: 'CONTRACTOR',
  contractor: 'CONTRACTOR',
  contracted: 'CONTRACTOR',
  freelance: 'CONTRACTOR',
  freelancer: 'CONTRACTOR',
  'contract to hire': 'CONTRACTOR',
  b2b: 'CONTRACTOR',
  'b2b contract': 'CONTRACTOR',
  'fixed term contract': 'TEMPORARY',
  freiberuflich: 'CONTRACTOR',
  temporary: 'TEMPORARY',
  temp: 'TEMPORARY',
  seasonal: 'TEMPORARY',
  'fixed term': 'TEMPORARY',
  befristet: 'TEMPORARY',
  intern: 'INTERN',
  internship: 'INTERN',
  praktikum: 'INTERN',
  stage: 'INTERN',
  volunteer: 'VOLUNTEER',
  'per diem': 'PER_DIEM',
  other: 'OTHER',
};

/** The schema.org name for one value, or null when the value is not a known employment type. */
export function normaliseEmploymentTypeValue(value: string): string | null {
  const key = value
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, ' ')
    .trim();
  if (key === '') return null;
  const known = SYNONYMS[key];
  if (known !== undefined) return known;
  const canonical = key.replace(/ /g, '_').toUpperCase();
  return Object.values(SYNONYMS).includes(canonical) ? canonical : null;
}

/**
 * Upper-cased schema.org values joined by ", " (duplicates dropped), from a string, a list of
 * strings, or a string listing several ("Full-time, Contract"). Values that name no known type
 * are kept upper-cased with "_" for spaces, so nothing a structured field said is lost — unless
 * `knownOnly` (for text read off a page, where "Part-time, 3 days a week" holds one type).
 */
export function normaliseEmploymentType(value: unknown, knownOnly = false): string | null {
  const entries = Array.isArray(value) ? (value as unknown[]) : [value];
  const types: string[] = [];
  for (const entry of entries) {
    if (typeof entry !== 'string') continue;
    for (const part of entry.split(/\s*(?:[,;|/]|\bor\b|\band\b|&)\s*/i)) {
      const trimmed = part.trim();
      if (trimmed === '') continue;
      const known = normaliseEmploymentTypeValue(trimmed);
      if (known === null && knownOnly) continue;
      const type = known ?? trimmed.replace(/[\s-]+/g, '_').toUpperCase();
      if (!types.includes(type)) types.push(type);
    }
  }
  return types.length > 0 ? types.join(', ') : null;
}

// Hours before contract kinds: "CDD de 12 mois, temps partiel" is part-time work first.
const EMPLOYMENT_WORDS: readonly [RegExp, string][] = [
  [/\b(?:full[\s-]?time|vollzeit|temps\s+(?:plein|complet))\b/i, 'FULL_TIME'],
  [/\b(?:part[\s-]?time|teilzeit|temps\s+partiel)\b/i, 'PART_TIME'],
  [/\b(?:intern(?:ship)?|praktikum|stage|werkstudent)\b/i, 'INTERN'],
  [/\b(?:fixed[\s-]term|temporary|seasonal|befristet|cdd)\b/i, 'TEMPORARY'],
  [/\b(?:contract(?:or)?|freelance|freiberuflich)\b/i, 'CONTRACTOR'],
];

/**
 * The kind of employment a page's label value names, also inside longer text: "Fixed term (24
 * months)" → TEMPORARY, "Teilzeit (16–20 Std./Woche)" → PART_TIME, "Full time, 37 hours a week" →
 * FULL_TIME. Unknown values give null.
 */
export function findEmploymentType(text: string): string | null {
  const direct = normaliseEmploymentType(text, true);
  if (direct !== null) return direct;
  // "Teilzeit oder Vollzeit": of the hours, the one named first.
  const [full, part] = EMPLOYMENT_WORDS.slice(0, 2).map(([pattern]) => pattern.exec(text)?.index);
  if (full !== undefined && part !== undefined) return part < full ? 'PART_TIME' : 'FULL_TIME';
  for (const [pattern, type] of EMPLOYMENT_WORDS) if (pattern.test(text)) return type;
  return null;
}
