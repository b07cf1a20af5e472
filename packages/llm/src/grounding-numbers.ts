/*
 * Numbers as the source text means them. A number grounds a salary only when the text marks it
 * as money (a currency symbol or code, a k / lakh / LPA / crore suffix, or a pay period right
 * after it) and years of experience only when a years unit follows it ("5 years", "5+ yrs",
 * "5-7 years"). So "05/2012", a phone number, "45 hours per week" or "Team of 12" ground
 * neither. Ranges share what one side writes: "$120-150K" is 120,000 to 150,000 dollars,
 * "70000 to 85000 EUR per year" is in euros, per year, on both sides. Total years can also be
 * computed from the text's own date ranges ("Jan 2018 – Present", "2012 - 2016").
 */

/** How often a salary is paid, as the text states it. */
export type PayPeriod = 'hour' | 'day' | 'week' | 'month' | 'year';

/** A number written in the text with what is written around it. */
export interface Amount {
  /** Index of its first digit in the prepared text. */
  start: number;
  /** Index after its digits and the suffix, currency, unit or period read with it. */
  end: number;
  /** What the digits may mean: `1.500` is 1500 (German) or 1.5 (English). */
  readings: number[];
  /** 1, or 1,000 for `k`, 100,000 for lakh / LPA, 1,000,000 for `M`, 10,000,000 for crore. */
  multiplier: number;
  /** The suffix is a money word (k, lakh, LPA, crore): the number is money without a symbol. */
  hasMoneySuffix: boolean;
  integerDigits: number;
  /** ISO codes it may be in (`$` is any dollar); empty when no currency is written. */
  currencies: string[];
  /** `currencies` comes from a written ISO code, which wins over a symbol ("$90,000 CAD"). */
  hasCurrencyCode: boolean;
  period: PayPeriod | null;
  /** A years unit follows it, or the range it ends. */
  isYears: boolean;
  /** "5+", "5 plus", "5 or more", "at least 5". */
  isAtLeast: boolean;
  /** Part of a date, a version or a number with slashes or colons: neither money nor years. */
  isCompound: boolean;
  /** The other end when this number starts a range ("5-7 years": 5's is 7). */
  rangeHigh?: Amount;
  /** The other end when this number ends a range. */
  rangeLow?: Amount;
}

/**
 * A number: Indian grouping (12,00,000), thousands with commas (120,000.50), with dots
 * (120.000,50), with spaces or apostrophes (120 000), a decimal point or comma (25.50, 3,5), or
 * plain digits. Each alternative is a fixed group repeated; nothing nests.
 */
const NUMBER =
  /(?<![\p{L}\p{N}])(?:(\d{1,2}(?:,\d{2})+,\d{3})|(\d{1,3}(?:,\d{3})+(?:\.\d+)?)|(\d{1,3}(?:\.\d{3})+(?:,\d+)?)|(\d{1,3}(?:[ ']\d{3})+)(?!\d)|(\d+(?:[.,]\d+)?))(?!\p{N})/gu;

const MULTIPLIERS: Record<string, number> = {
  k: 1_000,
  thousand: 1_000,
  m: 1_000_000,
  mn: 1_000_000,
  million: 1_000_000,
  l: 100_000,
  lakh: 100_000,
  lakhs: 100_000,
  lac: 100_000,
  lacs: 100_000,
  lpa: 100_000,
  cr: 10_000_000,
  crore: 10_000_000,
  crores: 10_000_000,
};
const MONEY_SUFFIXES = new Set(['k', 'thousand', 'l', 'lakh', 'lakhs', 'lac', 'lacs', 'lpa']);
const INDIAN_SUFFIXES = new Set([
  'l',
  'lakh',
  'lakhs',
  'lac',
  'lacs',
  'lpa',
  'cr',
  'crore',
  'crores',
]);

const SUFFIX = /(\s?)(k|thousand|mn|million|m|lakhs?|lacs?|lpa|crores?|cr|l)(?![\p{L}])/iuy;
const AT_LEAST_AFTER = /\s?(?:\+|plus\b|or more\b)/iy;
const YEARS_UNIT = /\s?(?:\+\s?)?(?:years?|yrs?|jahren?|ans|años|anos|anni)(?![\p{L}])/iuy;
const AT_LEAST_BEFORE =
  /\b(?:at least|minimum(?: of)?|min\.?|over|more than|mindestens|plus de|más de)\s$/i;

/** Currencies a symbol may stand for. */
const SYMBOLS: Record<string, string[]> = {
  $: ['USD', 'CAD', 'AUD', 'NZD', 'SGD', 'HKD', 'MXN', 'ARS', 'CLP', 'COP', 'TWD'],
  US$: ['USD'],
  CA$: ['CAD'],
  C$: ['CAD'],
  AU$: ['AUD'],
  A$: ['AUD'],
  NZ$: ['NZD'],
  HK$: ['HKD'],
  S$: ['SGD'],
  SG$: ['SGD'],
  R$: ['BRL'],
  MX$: ['MXN'],
  '€': ['EUR'],
  '£': ['GBP'],
  '¥': ['JPY', 'CNY'],
  '₹': ['INR'],
  rs: ['INR', 'PKR', 'LKR', 'NPR'],
  '₩': ['KRW'],
  '₪': ['ILS'],
  '₽': ['RUB'],
  '₺': ['TRY'],
  '₦': ['NGN'],
  '₱': ['PHP'],
  '฿': ['THB'],
  zł: ['PLN'],
  kr: ['SEK', 'NOK', 'DKK', 'ISK'],
  kč: ['CZK'],
  ft: ['HUF'],
  'fr.': ['CHF'],
};
/** ISO 4217 codes that are also common upper-case words. */
const WORD_LIKE_CODES = new Set(['ALL', 'TOP', 'CUP', 'TRY', 'MOP', 'BOB', 'GEL', 'MAD']);
const ISO_CODES = new Set(
  Intl.supportedValuesOf('currency').filter((code) => !WORD_LIKE_CODES.has(code)),
);

const CURRENCY_BEFORE =
  /(?:(?<![A-Za-z])((?:US|CA|AU|NZ|HK|SG|MX|C|A|S|R)\$)|([$€£¥₹₩₪₽₺₦₱฿])|(?<![A-Za-z])([Rr][Ss]\.?)|(?<![A-Za-z])([A-Z]{3}))\s?$/u;
const CURRENCY_AFTER = /\s?(?:([$€£¥₹₩₪₽₺₦₱฿]|zł|kr|Kč|Ft|Fr\.)|([A-Z]{3}))(?![\p{L}])/uy;

const PERIOD_UNITS: Record<string, PayPeriod> = {
  hour: 'hour',
  hr: 'hour',
  h: 'hour',
  stunde: 'hour',
  std: 'hour',
  heure: 'hour',
  hora: 'hour',
  hourly: 'hour',
  stündlich: 'hour',
  day: 'day',
  tag: 'day',
  jour: 'day',
  día: 'day',
  dia: 'day',
  daily: 'day',
  täglich: 'day',
  week: 'week',
  wk: 'week',
  woche: 'week',
  semaine: 'week',
  semana: 'week',
  weekly: 'week',
  wöchentlich: 'week',
  month: 'month',
  mo: 'month',
  mth: 'month',
  monat: 'month',
  mois: 'month',
  mes: 'month',
  monthly: 'month',
  monatlich: 'month',
  mensuel: 'month',
  year: 'year',
  yr: 'year',
  annum: 'year',
  jahr: 'year',
  an: 'year',
  année: 'year',
  año: 'year',
  ano: 'year',
  annually: 'year',
  annual: 'year',
  yearly: 'year',
  jährlich: 'year',
  annuel: 'year',
  pa: 'year',
  'p.a.': 'year',
  'p.a': 'year',
  ctc: 'year',
};
/**
 * A pay period right after an amount: "per year", "/hr", "a month", "an hour", "pro Stunde",
 * "annually", "p.a.". A unit noun needs its "per" or slash, so "45 hours per week" has none.
 */
const PERIOD_AFTER =
  /\s?(?:(?:brutto|gross|netto|net)\s)?(?:(?:\/\s?|(?:per|a|an|each|every|pro|par|por|al|la)\s)(hour|hr|h|day|week|wk|month|mo|mth|year|yr|annum|stunde|std|tag|woche|monat|jahr|heure|jour|semaine|mois|an|année|año|ano|hora|día|dia|semana|mes)|(hourly|daily|weekly|monthly|annually|annual|yearly|p\.\s?a\.?|pa|ctc|stündlich|täglich|wöchentlich|monatlich|jährlich|mensuel|annuel))(?![\p{L}])/iuy;
/** A period named before the amount on its line: "Annual salary: $120,000". */
const PERIOD_BEFORE =
  /\b(annual|yearly|annually|hourly|monthly|weekly|daily|jährlich|monatlich|stündlich)\b/giu;
/** What may stand between the two ends of a range: "120 - 150", "70000 to 85000 EUR", "$120K – $150K". */
const RANGE_JOIN =
  /^\s?(?:-|~|to|bis|till|until|and|à|a)\s?(?:[$€£¥₹]|[A-Z]{1,3}\$|[A-Z]{3}\s|[Rr]s\.?\s?)?$/u;

function matchAt(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}

function readings(groups: (string | undefined)[]): { values: number[]; integerDigits: number } {
  const [indian, commas, dots, spaced, plain] = groups;
  let values: number[];
  if (indian !== undefined) values = [Number(indian.replaceAll(',', ''))];
  else if (commas !== undefined) values = [Number(commas.replaceAll(',', ''))];
  else if (dots !== undefined) {
    values = [Number(dots.replaceAll('.', '').replace(',', '.'))];
    // One group and no decimal part: 1.500 may be an English 1.5 as well.
    if (/^\d{1,3}\.\d{3}$/.test(dots)) values.push(Number(dots));
  } else if (spaced !== undefined) values = [Number(spaced.replace(/[ ']/g, ''))];
  else values = [Number((plain ?? '').replace(',', '.'))];
  const integerDigits = Math.trunc(values[0] ?? 0).toString().length;
  return { values, integerDigits };
}

function currenciesOfSymbol(symbol: string): string[] {
  return (
    SYMBOLS[symbol] ??
    SYMBOLS[symbol.toLowerCase()] ??
    SYMBOLS[symbol.replace(/\.$/, '').toLowerCase()] ??
    []
  );
}

/** Every number of the prepared text with what is written around it, in text order. */
export function scanAmounts(text: string): Amount[] {
  const amounts: Amount[] = [];
  for (const match of text.matchAll(NUMBER)) {
    const start = match.index;
    const digitsEnd = start + match[0].length;
    const { values, integerDigits } = readings(match.slice(1));
    const amount: Amount = {
      start,
      end: digitsEnd,
      readings: values,
      multiplier: 1,
      hasMoneySuffix: false,
      integerDigits,
      currencies: [],
      hasCurrencyCode: false,
      period: null,
      isYears: false,
      isAtLeast: false,
      isCompound: isCompound(text, start, digitsEnd),
    };
    readBefore(text, amount);
    readAfter(text, amount);
    amounts.push(amount);
  }
  amounts.push(...yearsInWords(text));
  amounts.sort((a, b) => a.start - b.start);
  joinRanges(text, amounts);
  for (const amount of amounts) {
    if (amount.period !== null || amount.isYears) continue;
    if (!isMoney(amount)) continue;
    const lineStart = text.lastIndexOf('\n', amount.start - 1) + 1;
    const before = text.slice(Math.max(lineStart, amount.start - 80), amount.start);
    const named = [...before.matchAll(PERIOD_BEFORE)].at(-1)?.[1];
    if (named !== undefined) amount.period = PERIOD_UNITS[named.toLowerCase()] ?? null;
  }
  return amounts;
}

const NUMBER_WORDS = [
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
  'twenty',
];
const YEARS_IN_WORDS = new RegExp(
  `(?<![\\p{L}])(${NUMBER_WORDS.join('|')})(\\s?\\+|\\s(?:plus|or more))?\\s(?:years?|yrs?)(?![\\p{L}])`,
  'giu',
);

/** "Seven years", "ten+ years": years written as a word. */
function yearsInWords(text: string): Amount[] {
  return [...text.matchAll(YEARS_IN_WORDS)].map((match) => ({
    start: match.index,
    end: match.index + match[0].length,
    readings: [NUMBER_WORDS.indexOf((match[1] ?? '').toLowerCase()) + 1],
    multiplier: 1,
    hasMoneySuffix: false,
    integerDigits: 1,
    currencies: [],
    hasCurrencyCode: false,
    period: null,
    isYears: true,
    isAtLeast:
      match[2] !== undefined ||
      AT_LEAST_BEFORE.test(text.slice(Math.max(0, match.index - 20), match.index)),
    isCompound: false,
  }));
}

/** Digits joined to other digits by a slash, colon or dot: 05/2012, 12.05.2012, 10:30, 1.2.3. */
function isCompound(text: string, start: number, end: number): boolean {
  const isDigit = (at: number) => /\d/.test(text[at] ?? '');
  const before = text[start - 1] ?? '';
  const after = text[end] ?? '';
  return (
    ('/:.'.includes(before) && before !== '' && isDigit(start - 2)) ||
    ('/:.'.includes(after) && after !== '' && isDigit(end + 1))
  );
}

function readBefore(text: string, amount: Amount): void {
  const before = CURRENCY_BEFORE.exec(text.slice(Math.max(0, amount.start - 8), amount.start));
  if (before) {
    const [, prefixed, symbol, rupees, code] = before;
    if (code !== undefined) {
      if (ISO_CODES.has(code)) {
        amount.currencies = [code];
        amount.hasCurrencyCode = true;
      }
    } else amount.currencies = currenciesOfSymbol(prefixed ?? symbol ?? rupees ?? '');
  }
  amount.isAtLeast = AT_LEAST_BEFORE.test(text.slice(Math.max(0, amount.start - 20), amount.start));
}

function readAfter(text: string, amount: Amount): void {
  let at = amount.end;
  const suffix = matchAt(SUFFIX, text, at);
  if (suffix) {
    const [whole, space = '', word = ''] = suffix;
    const unit = word.toLowerCase();
    // A bare "L" is lakh only glued to a rupee amount ("₹12L").
    const isLakhLetter = unit === 'l';
    if (!isLakhLetter || (space === '' && amount.currencies.includes('INR'))) {
      amount.multiplier = MULTIPLIERS[unit] ?? 1;
      amount.hasMoneySuffix = MONEY_SUFFIXES.has(unit);
      if (INDIAN_SUFFIXES.has(unit) && amount.currencies.length === 0) amount.currencies = ['INR'];
      if (unit === 'lpa') amount.period = 'year';
      at += whole.length;
    }
  }
  const code = matchAt(CURRENCY_AFTER, text, at);
  if (code) {
    const [whole, symbol, iso] = code;
    if (iso !== undefined && ISO_CODES.has(iso)) {
      // An explicit code wins over a symbol: "$90,000 CAD" is in Canadian dollars.
      amount.currencies = [iso];
      amount.hasCurrencyCode = true;
      at += whole.length;
    } else if (symbol !== undefined) {
      if (!amount.hasCurrencyCode) amount.currencies = currenciesOfSymbol(symbol);
      at += whole.length;
    }
  }
  const atLeast = matchAt(AT_LEAST_AFTER, text, at);
  if (atLeast) {
    amount.isAtLeast = true;
    at += atLeast[0].length;
  }
  const years = matchAt(YEARS_UNIT, text, at);
  if (years) {
    amount.isYears = true;
    amount.end = at + years[0].length;
    return;
  }
  const period = matchAt(PERIOD_AFTER, text, at);
  if (period) {
    amount.period =
      PERIOD_UNITS[(period[1] ?? period[2] ?? '').toLowerCase().replace(/\s/g, '')] ?? null;
    at += period[0].length;
  }
  amount.end = at;
}

/** Pairs neighbours written as a range and lets each end take what the other writes. */
function joinRanges(text: string, amounts: Amount[]): void {
  for (let index = 0; index + 1 < amounts.length; index++) {
    const low = amounts[index];
    const high = amounts[index + 1];
    if (!low || !high || low.isCompound || high.isCompound) continue;
    if (high.start - low.end > 8 || !RANGE_JOIN.test(text.slice(low.end, high.start))) continue;
    if (low.isYears && !high.isYears) continue;
    low.rangeHigh = high;
    high.rangeLow = low;
    if (
      low.multiplier === 1 &&
      high.multiplier > 1 &&
      Math.max(...low.readings) <= Math.max(...high.readings)
    ) {
      low.multiplier = high.multiplier;
      low.hasMoneySuffix = high.hasMoneySuffix;
    }
    if (high.hasCurrencyCode && !low.hasCurrencyCode) {
      low.currencies = high.currencies;
      low.hasCurrencyCode = true;
    } else if (low.hasCurrencyCode && !high.hasCurrencyCode) {
      high.currencies = low.currencies;
      high.hasCurrencyCode = true;
    } else if (low.currencies.length === 0) low.currencies = high.currencies;
    else if (high.currencies.length === 0) high.currencies = low.currencies;
    low.period ??= high.period;
    high.period ??= low.period;
    if (high.isYears) low.isYears = true;
  }
}

/** Whether the text writes the amount as money. */
export function isMoney(amount: Amount): boolean {
  if (amount.isCompound || amount.isYears) return false;
  const marked = amount.currencies.length > 0 || amount.hasMoneySuffix || amount.period !== null;
  return marked && (amount.integerDigits >= 2 || amount.multiplier > 1);
}

export function sameNumber(a: number, b: number): boolean {
  return Math.abs(a - b) < 0.005;
}

/** Whether the amount, as money, may be `value`. */
export function isMoneyValue(amount: Amount, value: number): boolean {
  return (
    isMoney(amount) &&
    amount.readings.some((reading) => sameNumber(reading * amount.multiplier, value))
  );
}

/** Whether the amount is a years figure that may be `value` ("5 years", "5+ years", not the 7 of "5-7 years"). */
export function isYearsValue(amount: Amount, value: number): boolean {
  return (
    amount.isYears &&
    !amount.isCompound &&
    amount.multiplier === 1 &&
    amount.rangeLow === undefined &&
    amount.rangeHigh === undefined &&
    amount.readings.some((reading) => sameNumber(reading, value))
  );
}

// ---------------------------------------------------------------------------------------------
// Date ranges

const MONTH_NAMES: [RegExp, number][] = [
  [/^jan/, 1],
  [/^feb/, 2],
  [/^(?:mar|mär|maer)/, 3],
  [/^apr/, 4],
  [/^ma[iy]/, 5],
  [/^jun/, 6],
  [/^jul/, 7],
  [/^aug/, 8],
  [/^sep/, 9],
  [/^o[ck]t/, 10],
  [/^nov/, 11],
  [/^de[cz]/, 12],
];
const MONTH =
  'jan(?:uary|uar)?|feb(?:ruary|ruar)?|mar(?:ch)?|märz|maerz|apr(?:il)?|may|mai|jun[ei]?|jul[yi]?|aug(?:ust)?|sep(?:t(?:ember)?)?|o[ck]t(?:ober)?|nov(?:ember)?|de[cz](?:ember)?';
/** A month and year, a month number and year, a year and month number, or a year. */
const DATE = `(?:(${MONTH})\\.?\\s?,?\\s?((?:19|20)\\d{2})|(\\d{1,2})\\s?[/.]\\s?((?:19|20)\\d{2})|((?:19|20)\\d{2})\\s?[-/.]\\s?(0?[1-9]|1[0-2])(?![\\d])|((?:19|20)\\d{2}))`;
const NOW_WORDS = 'present|current|currently|now|today|date|ongoing|heute|aktuell|jetzt';
const DATE_RANGE = new RegExp(
  `(?<![\\p{L}\\p{N}])${DATE}\\s?(?:-|to|until|till|bis)\\s?(?:${DATE}|(${NOW_WORDS}))(?![\\p{N}])`,
  'giu',
);
const SINCE = new RegExp(`\\b(?:since|seit)\\s${DATE}(?![\\p{N}])`, 'giu');
/** A short line naming a section: where education starts, and the sections that end it. */
const EDUCATION_HEADING =
  /^\W*(?:education|academic\w*|qualifications|studies|ausbildung|studium|formation|educación|formación)\b/i;
const OTHER_HEADING =
  /^\W*(?:experience|work|employment|professional|career|projects|skills|certifications|berufserfahrung|expérience|experiencia)\b/i;

/** Month number (year × 12 + month − 1) of one DATE's groups; `end` reads a bare year as its January too. */
function monthOf(groups: (string | undefined)[]): number | null {
  const [name, nameYear, monthNumber, numberYear, isoYear, isoMonth, bareYear] = groups;
  if (name !== undefined && nameYear !== undefined) {
    const month = MONTH_NAMES.find(([pattern]) => pattern.test(name.toLowerCase()))?.[1];
    return month === undefined ? null : Number(nameYear) * 12 + month - 1;
  }
  if (monthNumber !== undefined && numberYear !== undefined) {
    const month = Number(monthNumber);
    return month >= 1 && month <= 12 ? Number(numberYear) * 12 + month - 1 : null;
  }
  if (isoYear !== undefined && isoMonth !== undefined)
    return Number(isoYear) * 12 + Number(isoMonth) - 1;
  if (bareYear !== undefined) return Number(bareYear) * 12;
  return null;
}

interface MonthSpan {
  from: number;
  to: number;
  isEducation: boolean;
}

function dateSpans(text: string, now: Date): MonthSpan[] {
  const nowMonth = now.getUTCFullYear() * 12 + now.getUTCMonth();
  const spans: MonthSpan[] = [];
  let isEducation = false;
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.length <= 40 && EDUCATION_HEADING.test(trimmed)) isEducation = true;
    else if (trimmed.length <= 40 && OTHER_HEADING.test(trimmed)) isEducation = false;
    if (!/\d/.test(line)) continue;
    for (const match of line.matchAll(DATE_RANGE)) {
      const from = monthOf(match.slice(1, 8));
      const to = match[15] !== undefined ? nowMonth : monthOf(match.slice(8, 15));
      if (from !== null && to !== null && from <= to && from >= 1950 * 12 && to <= nowMonth + 1)
        spans.push({ from, to, isEducation });
    }
    for (const match of line.matchAll(SINCE)) {
      const from = monthOf(match.slice(1, 8));
      if (from !== null && from >= 1950 * 12 && from <= nowMonth)
        spans.push({ from, to: nowMonth, isEducation });
    }
  }
  return spans;
}

/** Months covered by the spans, overlaps counted once. */
function coveredMonths(spans: MonthSpan[]): number {
  const sorted = [...spans].sort((a, b) => a.from - b.from);
  let total = 0;
  let current: { from: number; to: number } | undefined;
  for (const span of sorted) {
    if (current && span.from <= current.to) current.to = Math.max(current.to, span.to);
    else {
      if (current) total += current.to - current.from;
      current = { from: span.from, to: span.to };
    }
  }
  return total + (current ? current.to - current.from : 0);
}

/**
 * The totals of experience the text's date ranges give, in years: the months they cover
 * (overlaps once) and from the first start to the last end, each with and without the ranges of
 * an education section. Empty when the text has no date range.
 */
export function experienceTotals(text: string, now: Date): number[] {
  const all = dateSpans(text, now);
  if (all.length === 0) return [];
  const work = all.filter((span) => !span.isEducation);
  const totals = new Set<number>();
  for (const spans of [work, all]) {
    if (spans.length === 0) continue;
    totals.add(coveredMonths(spans) / 12);
    const first = Math.min(...spans.map((span) => span.from));
    const last = Math.max(...spans.map((span) => span.to));
    totals.add((last - first) / 12);
  }
  return [...totals];
}
