import { isIP } from 'node:net';
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

/** A whole number from `min` to `max`, or undefined when the variable is unset or empty. */
export function optionalIntegerFromEnv({ min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  const integer = integerFromEnv(min, { min, max });
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === '') return undefined;
      const parsed = integer.safeParse(value);
      if (parsed.success) return parsed.data;
      ctx.addIssue({ code: 'custom', message: `must be a whole number from ${min} to ${max}` });
      return z.NEVER;
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

/**
 * Comma-separated `address:port` pairs, the address an IP literal (IPv6 in brackets): exact peers,
 * never ranges or names, so that an exemption cannot reach further than the one service meant.
 * Each comes out as `address:port` with the IPv6 brackets dropped (`::1:8100`).
 */
export function peersFromEnv() {
  return z
    .string()
    .default('')
    .transform((value, ctx) => {
      const peers: string[] = [];
      for (const item of value.split(',').map((entry) => entry.trim())) {
        if (item === '') continue;
        const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(item);
        const address = match?.[1] ?? match?.[2];
        const port = Number(match?.[3]);
        if (address === undefined || isIP(address) === 0 || port < 1 || port > 65_535) {
          ctx.addIssue({
            code: 'custom',
            message: `must list address:port pairs with IP addresses (127.0.0.1:8100, [::1]:8100); not ${item}`,
          });
          return z.NEVER;
        }
        peers.push(`${address}:${port}`);
      }
      return [...new Set(peers)];
    });
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A comma-separated list of durations (`5s, 5m, 2h`, `250ms`) as milliseconds, each within
 * `max`; empty or unset gives `defaultValue`.
 */
export function durationListFromEnv(
  defaultValue: readonly number[],
  { max = 7 * 86_400_000 } = {},
) {
  return z
    .string()
    .default('')
    .transform((value, ctx) => {
      const items = value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '');
      if (items.length === 0) return [...defaultValue];
      const durations: number[] = [];
      for (const item of items) {
        const match = /^(\d{1,9})(ms|s|m|h)$/.exec(item);
        const ms = match ? Number(match[1]) * DURATION_UNITS_MS[match[2]!]! : Number.NaN;
        if (!(ms > 0 && ms <= max)) {
          ctx.addIssue({
            code: 'custom',
            message: `must list durations such as 5s, 5m, 2h or 250ms, each above 0 and at most ${max / 3_600_000} h; not ${item}`,
          });
          return z.NEVER;
        }
        durations.push(ms);
      }
      return durations;
    });
}
