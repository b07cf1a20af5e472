import { InvalidArgumentError } from 'commander';

/** `--limit 20`: a whole number within bounds, or a usage error naming them. */
export function integer(min: number, max: number) {
  return (value: string): number => {
    const number = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || number < min || number > max) {
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    }
    return number;
  };
}

/** `--set key=value`, repeatable: the value as JSON when it reads as JSON, else as text. */
export function keyValue(value: string, previous: Record<string, unknown> = {}) {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('expected key=value');
  const raw = value.slice(at + 1);
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // Not JSON: a plain string such as a URL.
  }
  return { ...previous, [value.slice(0, at)]: parsed };
}

/** `--config '{"url": …}'`: a JSON object. */
export function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('expected a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError('expected a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** `--pause 2-8` (seconds between requests, drawn in that range) or `--pause 0`. */
export function pauseRange(value: string): { min: number; max: number } {
  const match = /^(\d+)(?:-(\d+))?$/.exec(value.trim());
  const min = Number(match?.[1]);
  const max = Number(match?.[2] ?? match?.[1]);
  if (!match || max < min || max > 3600) {
    throw new InvalidArgumentError('expected seconds, as MIN-MAX or one number (0 to 3600)');
  }
  return { min, max };
}

/** `--since 2h`, `--since 30m`, `--since 7d`, or an ISO 8601 date-time: as ISO 8601. */
export function since(now: () => number = Date.now) {
  return (value: string): string => {
    const relative = /^(\d+)\s*([smhd])$/.exec(value.trim());
    if (relative) {
      const unit = { s: 1, m: 60, h: 3600, d: 86_400 }[relative[2] as 's' | 'm' | 'h' | 'd'];
      return new Date(now() - Number(relative[1]) * unit * 1000).toISOString();
    }
    const date = new Date(value);
    if (Number.isNaN(date.getTime())) {
      throw new InvalidArgumentError('expected a duration (30m, 2h, 7d) or an ISO 8601 date-time');
    }
    return date.toISOString();
  };
}

/** `--scope admin|viewer|tenant:<id>`. */
export function keyScope(value: string): string {
  if (value === 'admin' || value === 'viewer' || /^tenant:\S+$/.test(value)) return value;
  throw new InvalidArgumentError('expected admin, viewer or tenant:<id>');
}
