/**
 * Currencies as pages write them: ISO 4217 codes ("USD", "chf"), symbols ("£", "€", "₹") and
 * dollar and yen signs whose currency depends on where the job is ("$" in Toronto is CAD, "¥" in
 * Shanghai is CNY). Codes are checked against the runtime's own ISO 4217 list
 * (`Intl.supportedValuesOf('currency')`), so "ABC 120,000" is not a salary.
 *
 * A bare `$` with no country, or a country that does not use a dollar, reads as USD: most `$`
 * salaries on the web are US dollars, and US postings often name no country at all ("Austin,
 * TX"): 6 of the 12 USD salaries in the extraction corpus come with no country. Null there would
 * throw away most real US salaries to avoid a rare wrong guess.
 */

/** Current ISO 4217 codes (about 160 in Node 20's ICU). */
const ISO_CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

/**
 * Codes that are also English words in capitals ("ALL 3 shifts", "TOP 10", "TRY 2 weeks"): in
 * running text they are not taken as currencies. A structured currency field still accepts them.
 */
const WORD_CODES: ReadonlySet<string> = new Set([
  'ALL',
  'BAM',
  'BOB',
  'CUP',
  'GEL',
  'MAD',
  'MOP',
  'PEN',
  'SOS',
  'TOP',
  'TRY',
]);

/** The currency of a bare `$` by ISO 3166 country; other countries read it as USD. */
// prettier-ignore
const DOLLAR_BY_COUNTRY: Readonly<Record<string, string>> = {
  US: 'USD', CA: 'CAD', AU: 'AUD', NZ: 'NZD', SG: 'SGD', HK: 'HKD', TW: 'TWD', MX: 'MXN',
  AR: 'ARS', CL: 'CLP', CO: 'COP', UY: 'UYU', DO: 'DOP', JM: 'JMD', TT: 'TTD', BS: 'BSD',
  BB: 'BBD', BZ: 'BZD', BM: 'BMD', KY: 'KYD', FJ: 'FJD', NA: 'NAD', LR: 'LRD', GY: 'GYD',
  SR: 'SRD', BN: 'BND', SB: 'SBD', PR: 'USD', EC: 'USD', SV: 'USD', PA: 'USD',
};

/** `kr` is a krona or krone only where one is used; elsewhere it is not a currency. */
const KRONA_BY_COUNTRY: Readonly<Record<string, string>> = {
  SE: 'SEK',
  NO: 'NOK',
  DK: 'DKK',
  IS: 'ISK',
  FO: 'DKK',
  GL: 'DKK',
};

/** Symbols that name one currency wherever the job is, lower-cased. */
const FIXED_SYMBOLS: Readonly<Record<string, string>> = {
  us$: 'USD',
  c$: 'CAD',
  ca$: 'CAD',
  a$: 'AUD',
  au$: 'AUD',
  nz$: 'NZD',
  s$: 'SGD',
  hk$: 'HKD',
  nt$: 'TWD',
  mx$: 'MXN',
  r$: 'BRL',
  '£': 'GBP',
  '€': 'EUR',
  '₹': 'INR',
  '₩': 'KRW',
  '₪': 'ILS',
  '₺': 'TRY',
  '₱': 'PHP',
  '₫': 'VND',
  '₦': 'NGN',
  '₽': 'RUB',
  '₴': 'UAH',
  zł: 'PLN',
  '￥': 'JPY',
  '¥': 'JPY',
  rmb: 'CNY',
};

/**
 * A regular-expression source matching any currency symbol or code this module reads, longest
 * first so that "HK$" wins over "$" and "US$" over "$". Codes must stand alone: "USDT" is not USD.
 */
const TEXT_CODES = `(?<!\\p{L})(?:${[...ISO_CURRENCIES, 'RMB'].filter((code) => !WORD_CODES.has(code)).join('|')})(?!\\p{L})`;

/**
 * A regular-expression source (for the `u` flag) matching any currency symbol or code this
 * module reads, longest first so that "HK$" wins over "$" and "US$" over "$". Codes count in
 * capitals only and must stand alone: "USDT" is not USD, "usd" in prose is not a currency.
 */
export const CURRENCY_PATTERN = [
  '(?<!\\p{L})(?:US|CA|AU|NZ|HK|NT|MX|[CASR])\\$',
  '\\$',
  '[£€₹₩₪₺₱₫₦₽₴¥￥]',
  'zł',
  '(?<!\\p{L})kr\\.?(?!\\p{L})',
  TEXT_CODES,
].join('|');

/** A quick test for text that may state an amount of money at all. */
export const CURRENCY_HINT = new RegExp(
  `[$£€₹₩₪₺₱₫₦₽₴¥￥]|zł|(?<!\\p{L})kr(?!\\p{L})|${TEXT_CODES}`,
  'u',
);

/**
 * The ISO 4217 code for a symbol or code as a page wrote it, or null when it names no currency.
 * `country` is the job's country (a code or an English name, see `countryCode`): it decides a
 * bare `$`, `¥` (CNY in China, else JPY) and `kr`.
 */
export function currencyFromSymbol(symbol: string, country: string | null = null): string | null {
  const trimmed = symbol.trim();
  const lower = trimmed.toLowerCase();
  const fixed = FIXED_SYMBOLS[lower];
  if (fixed !== undefined) {
    return fixed === 'JPY' && countryCode(country) === 'CN' ? 'CNY' : fixed;
  }
  if (lower === '$') return DOLLAR_BY_COUNTRY[countryCode(country) ?? ''] ?? 'USD';
  if (lower === 'kr' || lower === 'kr.')
    return KRONA_BY_COUNTRY[countryCode(country) ?? ''] ?? null;
  return currencyCode(trimmed);
}

/** An ISO 4217 code in any case ("usd" → "USD"), or null when it is not a current one. */
export function currencyCode(value: string | null | undefined): string | null {
  const code = value?.trim().toUpperCase();
  return code !== undefined && ISO_CURRENCIES.has(code) ? code : null;
}

/** Names and abbreviations people write that the runtime's English region names do not give. */
// prettier-ignore
const COUNTRY_ALIASES: Readonly<Record<string, string>> = {
  uk: 'GB', 'u.k.': 'GB', 'great britain': 'GB', england: 'GB', scotland: 'GB', wales: 'GB',
  'northern ireland': 'GB', usa: 'US', 'u.s.': 'US', 'u.s.a.': 'US', 'united states of america': 'US',
  deutschland: 'DE', 'the netherlands': 'NL', nederland: 'NL', schweiz: 'CH', suisse: 'CH',
  österreich: 'AT', españa: 'ES', sverige: 'SE', danmark: 'DK', norge: 'NO', czechia: 'CZ',
  'hong kong': 'HK', 'hong kong sar': 'HK', macau: 'MO', macao: 'MO', uae: 'AE', 'south korea': 'KR',
  'korea': 'KR', 'czech republic': 'CZ', turkey: 'TR', 'türkiye': 'TR', 'mainland china': 'CN',
  "people's republic of china": 'CN', prc: 'CN',
};

let countryNames: Map<string, string> | undefined;

/** English country names from the runtime ("Canada" → "CA"), built on first use. */
function countryNameIndex(): Map<string, string> {
  if (countryNames !== undefined) return countryNames;
  countryNames = new Map(Object.entries(COUNTRY_ALIASES));
  const names = new Intl.DisplayNames(['en'], { type: 'region' });
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const first of letters) {
    for (const second of letters) {
      const code = `${first}${second}`;
      const name = names.of(code);
      // An unknown code comes back as itself (or "Unknown Region" for ZZ).
      if (name === undefined || name === code || code === 'ZZ') continue;
      // Withdrawn codes share their successor's name: "DD" and "DE" are both "Germany".
      if (!countryNames.has(name.toLowerCase()))
        countryNames.set(name.toLowerCase(), canonicalRegion(code));
    }
  }
  return countryNames;
}

/**
 * The ISO 3166 alpha-2 code of a country as a posting writes it: a code ("us", "GB") or an
 * English name ("Canada", "United Kingdom", "UK"); null when it is neither.
 */
export function countryCode(country: string | null | undefined): string | null {
  const text = country?.trim().toLowerCase().replace(/\s+/g, ' ');
  if (text === undefined || text === '') return null;
  const named = countryNameIndex().get(text);
  if (named !== undefined) return named;
  return /^[a-z]{2}$/.test(text) ? canonicalRegion(text.toUpperCase()) : null;
}

/** "UK" → "GB", "DD" → "DE": the current code for a withdrawn or reserved one. */
function canonicalRegion(code: string): string {
  return Intl.getCanonicalLocales(`und-${code}`)[0]?.slice(4) ?? code;
}
