import { z } from 'zod';

/** `true|false|1|0` only: a typo such as `ture` must stop the process, not read as false. */
export function booleanFromEnv(defaultValue: boolean) {
  return z
    .enum(['true', 'false', '1', '0'], { message: 'must be one of true, false, 1, 0' })
    .default(defaultValue ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1');
}

export function integerFromEnv(
  defaultValue: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER } = {},
) {
  return z
    .string()
    .default(String(defaultValue))
    .transform((value, ctx) => {
      const trimmed = value.trim();
      const parsed = /^-?\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
      if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max}` });
        return z.NEVER;
      }
      return parsed;
    });
}

export function numberFromEnv(defaultValue: number, { min = -Infinity, max = Infinity } = {}) {
  return z
    .string()
    .default(String(defaultValue))
    .transform((value, ctx) => {
      const parsed = value.trim() === '' ? Number.NaN : Number(value);
      if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
        ctx.addIssue({ code: 'custom', message: `must be a number from ${min} to ${max}` });
        return z.NEVER;
      }
      return parsed;
    });
}

/** Comma-separated list; blanks dropped. Each entry must be one of `allowed`. */
export function listFromEnv<const T extends string>(
  allowed: readonly T[],
  defaultValue: readonly T[],
) {
  return z
    .string()
    .default(defaultValue.join(','))
    .transform((value, ctx) => {
      const items = value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
      const unknown = items.filter((item) => !(allowed as readonly string[]).includes(item));
      if (unknown.length > 0 || items.length === 0) {
        ctx.addIssue({
          code: 'custom',
          message: `must list some of ${allowed.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`,
        });
        return z.NEVER;
      }
      return [...new Set(items)] as T[];
    });
}
