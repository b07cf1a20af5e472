/**
 * Postgres text and jsonb cannot hold U+0000 ("invalid byte sequence", "unsupported Unicode
 * escape sequence"), while pages, ATS payloads and API bodies can carry it. What Gleaner stores
 * from outside passes through here, so one stray NUL never fails a whole statement.
 */

/** The text without NUL characters. */
export function withoutNul(text: string): string {
  return text.includes('\0') ? text.replaceAll('\0', '') : text;
}

/** `value` as JSON that jsonb accepts: NULs dropped from every string, keys included. */
export function jsonForPg(value: unknown): string {
  const json = JSON.stringify(value);
  return json.includes('\\u0000') ? JSON.stringify(scrub(value)) : json;
}

function scrub(value: unknown): unknown {
  if (typeof value === 'string') return withoutNul(value);
  if (Array.isArray(value)) return value.map(scrub);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [withoutNul(key), scrub(item)]),
    );
  }
  return value;
}
