/**
 * Where a moment on Redis's clock falls on this process's clock (`performance.now()`).
 *
 * The gate's scripts read Redis's `TIME` somewhere between the call and its reply, so one reply
 * places Redis's clock only to within that round trip. On a busy machine a round trip takes
 * 10–30 ms, more than a grant's whole start deadline (10 ms): a lease reckoned from that reply
 * alone has its deadline before its earliest start and must be given back unsent (a third of the
 * politeness bench's late grants). The two clocks run at the same rate, so the fastest recent
 * reply places Redis's clock more tightly; its bounds are intersected with the current reply's,
 * which stay the fallback, so a stale or wrong sample can only narrow the current reply's bounds,
 * never move them.
 */

/** One script call: when it was sent and answered (local), and Redis's `TIME` in whole ms. */
export interface ClockReading {
  askedAt: number;
  repliedAt: number;
  redisNow: number;
}

/** A moment on the local clock, known to lie in `[earliest, latest]`. */
export interface LocalBounds {
  earliest: number;
  latest: number;
}

/** Readings older than this are not used: the clocks may drift apart (NTP slews) meanwhile. */
const MAX_READING_AGE_MS = 5_000;
/** Drift allowed for a reading up to `MAX_READING_AGE_MS` old (500 ppm, NTP's most). */
const DRIFT_MS = 2.5;
/** The recent readings kept, from which the fastest is used. */
const READINGS = 16;

export interface RedisClock {
  /** Records a reply's reading. */
  observe(reading: ClockReading): void;
  /** The local bounds of Redis time `redisMs`, given the reply that named it. */
  localBounds(redisMs: number, reply: ClockReading): LocalBounds;
}

/**
 * Bounds of Redis time `redisMs` from one reading: `TIME` was read at a local moment in
 * [asked, replied], and truncated to whole ms.
 */
function boundsFrom(redisMs: number, reading: ClockReading): LocalBounds {
  const ahead = redisMs - reading.redisNow;
  return { earliest: reading.askedAt + ahead - 1, latest: reading.repliedAt + ahead };
}

export function createRedisClock(): RedisClock {
  const readings: ClockReading[] = [];

  function fastestRecent(now: number): ClockReading | undefined {
    let best: ClockReading | undefined;
    for (const reading of readings) {
      if (now - reading.repliedAt > MAX_READING_AGE_MS) continue;
      if (!best || reading.repliedAt - reading.askedAt < best.repliedAt - best.askedAt)
        best = reading;
    }
    return best;
  }

  return {
    observe(reading) {
      readings.push(reading);
      if (readings.length > READINGS) readings.shift();
    },
    localBounds(redisMs, reply) {
      const own = boundsFrom(redisMs, reply);
      const best = fastestRecent(reply.repliedAt);
      if (!best || best === reply) return own;
      const other = boundsFrom(redisMs, best);
      const earliest = Math.max(own.earliest, other.earliest - DRIFT_MS);
      const latest = Math.min(own.latest, other.latest + DRIFT_MS);
      // Disjoint: the sample no longer fits (a clock stepped); the reply's own bounds hold.
      return earliest <= latest ? { earliest, latest } : own;
    },
  };
}
