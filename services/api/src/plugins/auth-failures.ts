import type { RedisClient } from '@gleaner/queue';

/**
 * Failed authentications (401s) per client address, counted in Redis so that every API process
 * shares the count, in fixed windows of a minute. Past `max` in a window the address is answered
 * 429 instead, and a key this process has not seen working is no longer looked up for it: a flood
 * of made-up keys then costs one Redis read per request and no query.
 */
export interface AuthFailures {
  /** Counts a failure of `address`; whether it is now past the limit, and for how long. */
  record(address: string): Promise<{ isLimited: boolean; retryAfterSeconds: number }>;
  /** How many seconds `address` stays at the limit; 0 when it is under it. */
  limitedFor(address: string): Promise<number>;
  readonly max: number;
}

const WINDOW_MS = 60_000;

export function createAuthFailures(redis: RedisClient, prefix: string, max: number): AuthFailures {
  const keyOf = (address: string) => `${prefix}:auth-failures:${address}`;
  return {
    max,
    async record(address) {
      try {
        const key = keyOf(address);
        const results = await redis
          .multi()
          .incr(key)
          .pexpire(key, WINDOW_MS, 'NX')
          .pttl(key)
          .exec();
        const count = Number(results?.[0]?.[1] ?? 0);
        const ttl = Number(results?.[2]?.[1] ?? WINDOW_MS);
        return { isLimited: count > max, retryAfterSeconds: Math.max(1, Math.ceil(ttl / 1000)) };
      } catch {
        // Redis down: the request is refused all the same (401), only not counted.
        return { isLimited: false, retryAfterSeconds: 0 };
      }
    },
    async limitedFor(address) {
      try {
        const key = keyOf(address);
        const results = await redis.multi().get(key).pttl(key).exec();
        const count = Number(results?.[0]?.[1] ?? 0);
        const ttl = Number(results?.[1]?.[1] ?? 0);
        // At the limit already: one more failure would be past it, so it is not looked up.
        return count >= max ? Math.max(1, Math.ceil(ttl / 1000)) : 0;
      } catch {
        // Redis down: the key is looked up, as requests are let through the rate limit then.
        return 0;
      }
    },
  };
}
