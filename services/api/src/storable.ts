import { z } from 'zod';

/**
 * What the API accepts ends up in Postgres, which cannot hold everything JSON and URLs can carry:
 * text and jsonb refuse U+0000 ("invalid byte sequence for encoding UTF8: 0x00", "unsupported
 * Unicode escape sequence"), jsonb refuses the escape of an unpaired surrogate, and pg writes one
 * into text as U+FFFD without a word. Such input is refused at the edge with a 400 naming the
 * field, not by the statement with a 500 (a fuzz run of 21,000 requests drew 153 of those).
 */
const UNSTORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

/** With the `u` flag a surrogate range matches only the surrogates that are not part of a pair. */
const UNPAIRED_SURROGATE = /[\uD800-\uDFFF]/u;

export function isStorableText(text: string): boolean {
  return !text.includes('\0') && !UNPAIRED_SURROGATE.test(text);
}

/** A string Postgres text can hold; chain the field's own checks after it. */
export function storableText() {
  return z.string().refine(isStorableText, { message: UNSTORABLE_MESSAGE });
}

/**
 * An ISO 8601 date-time Postgres accepts as drizzle sends it (`toISOString()`): a UTC year from 1
 * to 9999. Year 0 is "date/time field value out of range", and past 9999 `toISOString()` writes
 * `+010000-…`, which Postgres refuses too; an offset can carry either edge over.
 */
export function storableDateTime() {
  return z.iso.datetime({ offset: true }).refine(
    (value) => {
      const year = new Date(value).getUTCFullYear();
      // Not a date at all is the format check's to report.
      return Number.isNaN(year) || (year >= 1 && year <= 9999);
    },
    { message: 'must fall in the years 1 to 9999 (UTC)' },
  );
}

interface Pending {
  value: unknown;
  key: string | number;
  parent: Pending | undefined;
}

function pathOf(entry: Pending): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at: Pending | undefined = entry; at?.parent; at = at.parent) path.unshift(at.key);
  return path;
}

/** Issues reported for one object at most: a body of 10,000 NULs needs only the first few named. */
const MAX_ISSUES = 10;

/**
 * A JSON object Postgres jsonb can hold: every key and string, at any depth, is storable text.
 * Each bad one is named by its own path (`body.config.url`). Walked with a stack of its own
 * rather than by recursion: the body limit admits nesting tens of thousands of levels deep.
 */
export function storableJsonObject() {
  return z.record(z.string(), z.unknown()).superRefine((object, context) => {
    const pending: Pending[] = [{ value: object, key: '', parent: undefined }];
    let issues = 0;
    while (pending.length > 0 && issues < MAX_ISSUES) {
      const entry = pending.pop()!;
      if (typeof entry.value === 'string') {
        if (!isStorableText(entry.value)) {
          issues += 1;
          context.addIssue({ code: 'custom', message: UNSTORABLE_MESSAGE, path: pathOf(entry) });
        }
        continue;
      }
      if (entry.value === null || typeof entry.value !== 'object') continue;
      const items: [string | number, unknown][] = Array.isArray(entry.value)
        ? (entry.value as unknown[]).map((value, index) => [index, value])
        : Object.entries(entry.value as Record<string, unknown>);
      for (const [key, value] of items) {
        const child = { value, key, parent: entry };
        if (typeof key === 'string' && !isStorableText(key)) {
          issues += 1;
          context.addIssue({
            code: 'custom',
            message: `key ${UNSTORABLE_MESSAGE}`,
            path: pathOf(child),
          });
        }
        pending.push(child);
      }
    }
  });
}
