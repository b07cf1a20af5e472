import { describe, expect, it } from 'vitest';
import { createRedisClock } from './redis-clock.js';

describe('createRedisClock', () => {
  it('places a moment by its own reply alone when nothing faster was seen', () => {
    const clock = createRedisClock();
    const reply = { askedAt: 1_000, repliedAt: 1_030, redisNow: 50_000 };
    clock.observe(reply);
    // Redis's TIME was read somewhere in [1000, 1030] local, truncated to whole ms.
    expect(clock.localBounds(50_200, reply)).toEqual({ earliest: 1_199, latest: 1_230 });
  });

  it('narrows a slow reply by the fastest recent one, never past the reply’s own bounds', () => {
    const clock = createRedisClock();
    // Redis's clock is local + 49,000 (to within the fast reply's 0.4 ms).
    clock.observe({ askedAt: 500, repliedAt: 500.4, redisNow: 49_500 });
    const slow = { askedAt: 1_000, repliedAt: 1_030, redisNow: 50_015 };
    clock.observe(slow);
    const bounds = clock.localBounds(50_200, slow);
    // The fast reading alone: [1199, 1200.4], widened by 2.5 ms for drift.
    expect(bounds.earliest).toBeCloseTo(1_196.5);
    expect(bounds.latest).toBeCloseTo(1_202.9);
    const own = { earliest: 50_200 - 50_015 + 1_000 - 1, latest: 50_200 - 50_015 + 1_030 };
    expect(bounds.earliest).toBeGreaterThanOrEqual(own.earliest);
    expect(bounds.latest).toBeLessThanOrEqual(own.latest);
  });

  it('ignores a reading older than 5 s, and one that no longer fits (a clock stepped)', () => {
    const clock = createRedisClock();
    clock.observe({ askedAt: 0, repliedAt: 0.2, redisNow: 49_000 });
    const later = { askedAt: 6_000, repliedAt: 6_040, redisNow: 55_020 };
    clock.observe(later);
    expect(clock.localBounds(55_100, later)).toEqual({ earliest: 6_079, latest: 6_120 });

    const stepped = createRedisClock();
    stepped.observe({ askedAt: 1_000, repliedAt: 1_000.2, redisNow: 50_000 });
    // Redis's clock jumped 100 ms ahead since: the fast reading's bounds miss this reply's.
    const reply = { askedAt: 2_000, repliedAt: 2_020, redisNow: 51_110 };
    stepped.observe(reply);
    expect(stepped.localBounds(51_200, reply)).toEqual({ earliest: 2_089, latest: 2_110 });
  });
});
