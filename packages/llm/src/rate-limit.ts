/**
 * The provider's rate-limit state as of one answer (Groq's `x-ratelimit-*` headers). Groq's
 * request limit is per day and its token limit per minute; a field is absent when its header
 * is absent or unreadable.
 */
export interface ProviderRateLimit {
  limitRequests?: number;
  remainingRequests?: number;
  /** Until the request window resets, in ms. */
  resetRequestsMs?: number;
  limitTokens?: number;
  remainingTokens?: number;
  /** Until the token window resets, in ms. */
  resetTokensMs?: number;
}

/** Response headers as fetch's `Headers` or as a plain object (node:http's, lower-case names). */
export type HeaderSource =
  { get(name: string): string | null } | Record<string, string | string[] | undefined>;

const UNIT_MS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  ns: 0.000_001,
};

/**
 * Milliseconds in a Go-style duration as Groq writes its resets (`2m59.56s`, `7.66s`, `120ms`,
 * `1h2m`); a bare number is seconds. Rounded up to a whole ms, so a wait never ends early.
 * `undefined` when the text is not a duration.
 */
export function parseGroqDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  if (!/^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(trimmed)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) {
    ms += Number(amount) * (UNIT_MS[unit ?? ''] ?? 0);
  }
  // Less a hair, so float error (59.56 * 1000 = 59560.000000000004) does not add a ms.
  return Math.max(0, Math.ceil(ms - 1e-6));
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof headers.get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

function count(text: string | undefined): number | undefined {
  return text !== undefined && /^\s*\d+\s*$/.test(text) ? Number(text) : undefined;
}

function duration(text: string | undefined): number | undefined {
  return text === undefined ? undefined : parseGroqDuration(text);
}

/** The `x-ratelimit-*` headers of a provider answer; unreadable values are left out. */
export function parseProviderRateLimit(headers: HeaderSource): ProviderRateLimit {
  const fields: ProviderRateLimit = {
    limitRequests: count(header(headers, 'x-ratelimit-limit-requests')),
    remainingRequests: count(header(headers, 'x-ratelimit-remaining-requests')),
    resetRequestsMs: duration(header(headers, 'x-ratelimit-reset-requests')),
    limitTokens: count(header(headers, 'x-ratelimit-limit-tokens')),
    remainingTokens: count(header(headers, 'x-ratelimit-remaining-tokens')),
    resetTokensMs: duration(header(headers, 'x-ratelimit-reset-tokens')),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** Default wait after a 429 that says nothing about when to come back. */
export const DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * How long to wait after a 429: `retry-after-ms`, else `retry-after` (seconds, as Groq sends it
 * on 429s only, or an HTTP date), else
 * the reset of the exhausted window (the later of both when neither or both are exhausted),
 * else a second.
 */
export function retryAfterMs(headers: HeaderSource, rateLimit: ProviderRateLimit): number {
  // Exact milliseconds where the provider gives them (groq-sdk reads this one first too).
  const exact = header(headers, 'retry-after-ms')?.trim();
  if (exact !== undefined && /^\d+(?:\.\d+)?$/.test(exact)) return Math.ceil(Number(exact));
  const retryAfter = header(headers, 'retry-after')?.trim();
  if (retryAfter !== undefined && /^\d+(?:\.\d+)?$/.test(retryAfter)) {
    return Math.ceil(Number(retryAfter) * 1000);
  }
  if (retryAfter !== undefined && retryAfter !== '') {
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(0, at - Date.now());
  }
  const requestsOut = rateLimit.remainingRequests === 0 ? rateLimit.resetRequestsMs : undefined;
  const tokensOut = rateLimit.remainingTokens === 0 ? rateLimit.resetTokensMs : undefined;
  const exhausted = [requestsOut, tokensOut].filter((ms) => ms !== undefined);
  const candidates =
    exhausted.length > 0
      ? exhausted
      : [rateLimit.resetRequestsMs, rateLimit.resetTokensMs].filter((ms) => ms !== undefined);
  return candidates.length > 0 ? Math.max(...candidates) : DEFAULT_RETRY_AFTER_MS;
}
