/**
 * Salary from text: "£110000 - £120000 per annum", "$35-$40/h", "€60k–€75k", "USD 120,000 to
 * 150,000 a year", "55.000 € brutto/Jahr", "Up to £60,000".
 *
 * Used for a `baseSalary` given as a string, a MonetaryAmount whose value is a string, and for
 * salary lines in a description when the page has no structured salary. In free text a figure
 * counts only with a currency and, unless it is a range, a word that says it is pay: "$2,000
 * learning budget" or "we raised $40M" are not salaries.
 */

import { CURRENCY_HINT, CURRENCY_PATTERN, currencyFromSymbol } from './currency.js';

export interface Salary {
  min: number | null;
  max: number | null;
  /** ISO 4217, upper-cased. */
  currency: string | null;
  /** "hour", "day", "week", "month", "year", or the page's own lower-cased unit. */
  period: string | null;
}

export const NO_SALARY: Salary = { min: null, max: null, currency: null, period: null };

const CURRENCY = `(?:${CURRENCY_PATTERN})`;
/**
 * 110000 · 110,000 · 110.000 · 110 000 · 18,00,000 (Indian lakh grouping) · 35.50 · 1.5 —
 * followed by an optional k.
 */
const AMOUNT = `(\\d{1,2}(?:,\\d{2})+,\\d{3}|\\d{1,3}(?:[,.\\u00a0\\u202f ]\\d{3})+(?:[.,]\\d{1,2})?|\\d+(?:[.,]\\d{1,2})?)(\\s?[kK](?![a-zA-Z]))?`;
const RANGE_SEPARATOR = `\\s*(?:-|–|—|to|bis|à|and|TO)\\s*`;
const SALARY_PATTERN = new RegExp(
  `(${CURRENCY})?\\s?${AMOUNT}\\s?(${CURRENCY})?(?:${RANGE_SEPARATOR}(${CURRENCY})?\\s?${AMOUNT}\\s?(${CURRENCY})?)?`,
  'gu',
);

interface PeriodRule {
  period: string;
  pattern: RegExp;
}

/** Matched against the text right after the figures (and, failing that, the whole text). */
// prettier-ignore
const PERIOD_RULES: readonly PeriodRule[] = [
  { period: 'hour', pattern: /^(?:\/\s?h(?:ou)?r?\b|per\s+hour|an?\s+hour|hourly|p\/?h\b|ph\b|pro\s+stunde|\/\s?stunde|de\s+l'heure)/i },
  { period: 'day', pattern: /^(?:\/\s?day\b|per\s+day|a\s+day|daily|day\s+rate|p\/?d\b|pro\s+tag|\/\s?tag\b)/i },
  { period: 'week', pattern: /^(?:\/\s?(?:wk|week)\b|per\s+week|a\s+week|weekly|pw\b)/i },
  { period: 'month', pattern: /^(?:\/\s?mo(?:nth)?\b|per\s+month|a\s+month|monthly|pcm\b|p\/?m\b|pro\s+monat|\/\s?monat|monatlich|par\s+mois)/i },
  { period: 'year', pattern: /^(?:\/\s?(?:yr|year|annum|a)\b|per\s+(?:year|annum)|an?\s+(?:year|annum)|annual(?:ly)?|yearly|p\.?\s?a\b\.?|pa\b|pro\s+jahr|\/\s?jahr|jährlich|par\s+an)/i },
];

const ANYWHERE_PERIOD_RULES: readonly PeriodRule[] = PERIOD_RULES.map(({ period, pattern }) => ({
  period,
  pattern: new RegExp(`(?:^|[\\s(])${pattern.source.slice(1)}`, 'i'),
}));

/** Words that make a single figure in free text a salary. */
const PAY_WORDS =
  /\b(?:salary|salaries|compensation|pay|paid|wage|remuneration|rate|base|OTE|earn|earnings|stipend|gehalt|vergütung|jahresgehalt|salaire|rémunération)\b/i;

const LAKHS = /^\s?(?:(lpa)|lakhs?|lacs?)(?![a-z])/i;

const NOISE_FOLLOWING =
  /^\s?(?:m\b|mn\b|bn\b|million|billion|\+?\s?(?:users|customers|employees|people|years?))/i;

/**
 * Reads the first salary in a short text such as a baseSalary string. `defaultCurrency` applies
 * when the text names none (a MonetaryAmount's `currency`); without either, a text without a
 * currency yields null, since "3-5 years" has figures too. `country` (the job's, a code or an
 * English name) decides what a bare "$", "¥" or "kr" means (see currency.ts).
 */
export function parseSalaryText(
  text: string,
  defaultCurrency: string | null = null,
  country: string | null = null,
): Salary | null {
  return findSalary(text, { defaultCurrency, country, requirePayContext: false });
}

/**
 * The salary stated in free text (a description, one line per paragraph or item): a line
 * qualifies when it has a currency figure and either a range or a pay word ("Salary: $120,000",
 * "£45k–£55k"). Currency codes count in capitals only ("USD", not "usd"). `country` as for
 * `parseSalaryText`.
 */
export function findSalaryInText(
  text: string | null,
  country: string | null = null,
): Salary | null {
  // The full pattern tries every digit of every line; most descriptions name no currency at all.
  if (text === null || !CURRENCY_HINT.test(text)) return null;
  for (const line of text.split('\n')) {
    if (!CURRENCY_HINT.test(line)) continue;
    const salary = findSalary(line, { defaultCurrency: null, country, requirePayContext: true });
    if (salary !== null) return salary;
  }
  return null;
}

interface FindOptions {
  defaultCurrency: string | null;
  country: string | null;
  requirePayContext: boolean;
}

function findSalary(text: string, options: FindOptions): Salary | null {
  SALARY_PATTERN.lastIndex = 0;
  for (let match = SALARY_PATTERN.exec(text); match !== null; match = SALARY_PATTERN.exec(text)) {
    if (match[0].trim() === '') {
      SALARY_PATTERN.lastIndex++;
      continue;
    }
    const salary = readMatch(text, match, options);
    if (salary !== null) return salary;
  }
  return null;
}

function readMatch(text: string, match: RegExpExecArray, options: FindOptions): Salary | null {
  const [
    ,
    currencyBefore1,
    amount1,
    k1,
    currencyAfter1,
    currencyBefore2,
    amount2,
    k2,
    currencyAfter2,
  ] = match;
  const before = text.slice(Math.max(0, match.index - 1), match.index);
  const after = text.slice(match.index + match[0].length);
  // Part of a word or a longer number ("v2", "A4", "1234-5678") is not an amount.
  if (/[a-zA-Z0-9]/.test(before) && currencyBefore1 === undefined) return null;
  if (NOISE_FOLLOWING.test(after)) return null;

  const currencyText = currencyBefore1 ?? currencyAfter1 ?? currencyBefore2 ?? currencyAfter2;
  const currency =
    currencyText === undefined
      ? options.defaultCurrency
      : currencyFromSymbol(currencyText, options.country);
  if (currency === null) return null;
  const isRange = amount2 !== undefined;
  if (options.requirePayContext && !isRange && !PAY_WORDS.test(text)) return null;

  let first = parseAmount(amount1, k1);
  let second = isRange ? parseAmount(amount2, k2) : null;
  if (first === null) return null;
  // "₹12 LPA", "₹8-10 lakhs": Indian salaries in lakhs (100,000) per annum.
  const lakhs = LAKHS.exec(after);
  if (lakhs !== null) {
    first *= 100_000;
    if (second !== null) second *= 100_000;
  }
  // "60-75k": the k of the upper bound applies to the lower one too.
  if (second !== null && k1 === undefined && k2 !== undefined && first < 1000) first *= 1000;
  if (second !== null && second < first) second = null;
  if (second === null && isRange) return null; // "2020-2021" style noise with a currency is odd; skip

  const period =
    (lakhs?.[1] === undefined ? null : 'year') ??
    readPeriod(lakhs === null ? after : after.slice(lakhs[0].length)) ??
    readPeriodAnywhere(text) ??
    inferPeriod(first, k1 !== undefined || k2 !== undefined);
  const prefix = text.slice(Math.max(0, match.index - 12), match.index).toLowerCase();
  if (!isRange && /(?:up to|bis zu|max(?:imum)?\.?)\s*$/.test(prefix)) {
    return { min: null, max: first, currency, period };
  }
  if (!isRange && /(?:from|starting at|ab|min(?:imum)?\.?)\s*$/.test(prefix)) {
    return { min: first, max: null, currency, period };
  }
  return { min: first, max: second ?? first, currency, period };
}

/**
 * "110,000" and "110.000" are thousands; "35.50" and "1,5" are decimals: a separator followed by
 * exactly three digits groups thousands, one or two digits make a fraction.
 */
function parseAmount(amount: string | undefined, k: string | undefined): number | null {
  if (amount === undefined) return null;
  let digits = amount.replace(/[\u00a0\u202f ]/g, '');
  const fraction = /[.,](\d{1,2})$/.exec(digits);
  let value: number;
  if (fraction !== null) {
    value = Number(`${digits.slice(0, fraction.index).replace(/[.,]/g, '')}.${fraction[1] ?? '0'}`);
  } else {
    digits = digits.replace(/[.,]/g, '');
    value = Number(digits);
  }
  if (!Number.isFinite(value)) return null;
  if (k !== undefined) value = Math.round(value * 1000);
  return value > 0 ? value : null;
}

function readPeriod(after: string): string | null {
  const head = after
    .replace(/^[\s,]*(?:(?:gross|brutto|net|netto|base|OTE|\+\s?\w+)\s*)*/i, '')
    .slice(0, 40);
  for (const rule of PERIOD_RULES) if (rule.pattern.test(head)) return rule.period;
  // "per word", "per shift": the page's own unit, as with an unknown unitText.
  const unit = /^(?:per|a|an|\/)\s?([a-z]{3,12})\b/i.exec(head);
  return unit === null ? null : normaliseSalaryPeriod(unit[1] ?? '');
}

function readPeriodAnywhere(text: string): string | null {
  for (const rule of ANYWHERE_PERIOD_RULES) if (rule.pattern.test(text)) return rule.period;
  return null;
}

/** Without a stated unit: "60k" or 15,000 and more is a year's pay; smaller figures stay unknown. */
function inferPeriod(amount: number, hasK: boolean): string | null {
  return hasK || amount >= 15000 ? 'year' : null;
}

const UNIT_SYNONYMS: Record<string, string> = {
  hour: 'hour',
  hours: 'hour',
  hourly: 'hour',
  hr: 'hour',
  h: 'hour',
  day: 'day',
  days: 'day',
  daily: 'day',
  week: 'week',
  weeks: 'week',
  weekly: 'week',
  month: 'month',
  months: 'month',
  monthly: 'month',
  year: 'year',
  years: 'year',
  yearly: 'year',
  annual: 'year',
  annually: 'year',
  annum: 'year',
  'per annum': 'year',
  'per year': 'year',
  'per hour': 'hour',
  'per month': 'month',
  'per week': 'week',
  'per day': 'day',
  'p.a.': 'year',
  pa: 'year',
};

/**
 * schema.org's unitText (HOUR, DAY, WEEK, MONTH, YEAR) lower-cased, with common spellings mapped
 * to those names; an unknown unit is kept lower-cased so it stays recognisable.
 */
export function normaliseSalaryPeriod(unitText: string): string {
  const lower = unitText.trim().toLowerCase();
  return UNIT_SYNONYMS[lower] ?? lower;
}
