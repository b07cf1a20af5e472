/**
 * Dates to ISO 8601. A date stays a date (YYYY-MM-DD, as published); a date-time becomes a UTC
 * timestamp. Never depends on the machine's time zone: a date-time without an offset is read as
 * UTC, and written-out dates ("2 October 2026", "Oct 2, 2026") are parsed here rather than by
 * `Date.parse`, which would read them as local midnight.
 *
 * Relative dates ("3 days ago") and numbers are not dates we can place: null.
 */

// prettier-ignore
const MONTHS: Record<string, number> = {
  jan: 1, january: 1, januar: 1, janvier: 1,
  feb: 2, february: 2, februar: 2, février: 2, fevrier: 2,
  mar: 3, march: 3, märz: 3, maerz: 3, mars: 3,
  apr: 4, april: 4, avril: 4,
  may: 5, mai: 5,
  jun: 6, june: 6, juni: 6, juin: 6,
  jul: 7, july: 7, juli: 7, juillet: 7,
  aug: 8, august: 8, août: 8, aout: 8,
  sep: 9, sept: 9, september: 9, septembre: 9,
  oct: 10, october: 10, oktober: 10, octobre: 10, okt: 10,
  nov: 11, november: 11, novembre: 11,
  dec: 12, december: 12, dezember: 12, décembre: 12, decembre: 12, dez: 12,
};

function pad(value: number): string {
  return String(value).padStart(2, '0');
}

function isoDate(year: number, month: number, day: number): string | null {
  if (year < 1990 || year > 2100 || month < 1 || month > 12 || day < 1) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return day > daysInMonth ? null : `${year}-${pad(month)}-${pad(day)}`;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

export function normaliseDate(value: string): string | null {
  const text = value.trim();
  if (text === '') return null;

  const date = ISO_DATE.exec(text);
  if (date !== null) return isoDate(Number(date[1]), Number(date[2]), Number(date[3]));

  const dateTime = ISO_DATE_TIME.exec(text);
  if (dateTime !== null) {
    const [, year, month, day, hour, minute, second = '00', fraction = '', zone = 'Z'] = dateTime;
    if (isoDate(Number(year), Number(month), Number(day)) === null) return null;
    const offset =
      zone.toUpperCase() === 'Z'
        ? 'Z'
        : zone.length === 3
          ? `${zone}:00`
          : zone.includes(':')
            ? zone
            : `${zone.slice(0, 3)}:${zone.slice(3)}`;
    const millis = fraction.padEnd(3, '0').slice(0, 3);
    const time = Date.parse(
      `${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${offset}`,
    );
    return Number.isNaN(time) ? null : new Date(time).toISOString();
  }

  // 2026/10/02 or 2026.10.02
  const yearFirst = /^(\d{4})[/.](\d{1,2})[/.](\d{1,2})$/.exec(text);
  if (yearFirst !== null)
    return isoDate(Number(yearFirst[1]), Number(yearFirst[2]), Number(yearFirst[3]));

  // 02.10.2026 (day first, as written in Germany) or 10/02/2026 (US month first unless the first
  // number cannot be a month; ambiguous dates like 03/04/2026 are left alone).
  const numeric = /^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})$/.exec(text);
  if (numeric !== null) {
    const first = Number(numeric[1]);
    const second = Number(numeric[3]);
    const year = Number(numeric[4]);
    if (numeric[2] === '.') return isoDate(year, second, first);
    if (first > 12) return isoDate(year, second, first);
    if (second > 12 || first === second) return isoDate(year, first, second);
    return null;
  }

  const words = text
    .toLowerCase()
    .replace(/(\d)(st|nd|rd|th)\b/g, '$1')
    .replace(/[,]/g, ' ')
    .replace(/^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\s+/, '')
    .split(/[\s.]+/)
    .filter((word) => word !== '');
  if (words.length === 3) {
    const [a = '', b = '', c = ''] = words;
    // 2 October 2026 · 2. Oktober 2026
    if (/^\d{1,2}$/.test(a) && MONTHS[b] !== undefined && /^\d{4}$/.test(c))
      return isoDate(Number(c), MONTHS[b], Number(a));
    // October 2 2026
    if (MONTHS[a] !== undefined && /^\d{1,2}$/.test(b) && /^\d{4}$/.test(c))
      return isoDate(Number(c), MONTHS[a], Number(b));
  }
  // Anything else that names its zone ("Fri, 02 Oct 2026 09:30:00 GMT") is unambiguous.
  if (/\b(?:GMT|UTC)\b|[+-]\d{2}:?\d{2}$/.test(text) && /[a-z]{3}/i.test(text)) {
    const time = Date.parse(text);
    if (!Number.isNaN(time)) return new Date(time).toISOString();
  }
  return null;
}
