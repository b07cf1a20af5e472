import { describe, expect, it } from 'vitest';
import { parseGroqDuration, parseProviderRateLimit, retryAfterMs } from './rate-limit.js';

describe('parseGroqDuration', () => {
  it.each([
    ['2m59.56s', 179_560],
    ['7.66s', 7660],
    ['120ms', 120],
    ['1h2m3s', 3_723_000],
    ['0s', 0],
    ['500us', 1],
    ['12', 12_000],
    [' 30ms ', 30],
  ])('reads %s as %i ms', (text, ms) => {
    expect(parseGroqDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '5 s', '1m-2s', 'ms', '2x'])('does not read %j', (text) => {
    expect(parseGroqDuration(text)).toBeUndefined();
  });
});

describe('parseProviderRateLimit', () => {
  it('reads fetch Headers and plain header objects alike, leaving out what it cannot read', () => {
    const raw = {
      'x-ratelimit-limit-requests': '14400',
      'x-ratelimit-remaining-requests': '14399',
      'x-ratelimit-reset-requests': '6s',
      'x-ratelimit-limit-tokens': '6000',
      'x-ratelimit-remaining-tokens': 'lots',
      'x-ratelimit-reset-tokens': '7.66s',
    };
    const expected = {
      limitRequests: 14400,
      remainingRequests: 14399,
      resetRequestsMs: 6000,
      limitTokens: 6000,
      resetTokensMs: 7660,
    };
    expect(parseProviderRateLimit(new Headers(raw))).toEqual(expected);
    expect(parseProviderRateLimit(raw)).toEqual(expected);
    expect(parseProviderRateLimit({})).toEqual({});
  });
});

describe('retryAfterMs', () => {
  it('prefers retry-after, then the exhausted window, then the later reset, then a second', () => {
    const limits = {
      remainingRequests: 5,
      resetRequestsMs: 60_000,
      remainingTokens: 0,
      resetTokensMs: 2500,
    };
    expect(retryAfterMs({ 'retry-after': '3' }, limits)).toBe(3000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '123', 'retry-after': '1' }), limits)).toBe(
      123,
    );
    expect(retryAfterMs({}, limits)).toBe(2500);
    expect(retryAfterMs({}, { resetRequestsMs: 800, resetTokensMs: 1200 })).toBe(1200);
    expect(retryAfterMs({}, {})).toBe(1000);
  });
});
