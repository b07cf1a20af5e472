import {
  assertAllSent,
  RELEASE_HELD_KEYS,
  schedulerLockKey,
  sendTogether,
  type RedisClient,
} from '@gleaner/queue';

/**
 * Per-site locks with expiry (seed 003): a replica starts a site's run only while it holds the
 * site's lock, so replicas split the due sites between them instead of racing for each one. The
 * lock is a courtesy, not the guarantee: a lock that expires mid-pass (a paused process) lets a
 * second replica try, and the database refuses a second run for the same slot.
 */
export interface SiteLocks {
  /** Takes the free locks among `siteIds` in one round trip (a node); returns the ids now held. */
  acquire(siteIds: readonly string[]): Promise<Set<string>>;
  release(siteIds: readonly string[]): Promise<void>;
}

export function createSiteLocks(options: {
  redis: RedisClient;
  prefix: string;
  holder: string;
  ttlMs: number;
}): SiteLocks {
  const { redis, prefix, holder, ttlMs } = options;
  return {
    async acquire(siteIds) {
      if (siteIds.length === 0) return new Set();
      const results = await sendTogether(
        redis,
        siteIds.map((id) => ['set', schedulerLockKey(prefix, id), holder, 'PX', ttlMs, 'NX']),
      );
      const held = new Set<string>();
      results.forEach(([error, reply], index) => {
        if (error) throw error;
        if (reply === 'OK') held.add(siteIds[index]!);
      });
      return held;
    },
    async release(siteIds) {
      if (siteIds.length === 0) return;
      // A script per lock (only while this replica holds it): on a cluster, locks of one pass
      // live in many slots.
      assertAllSent(
        await sendTogether(
          redis,
          siteIds.map((id) => ['eval', RELEASE_HELD_KEYS, 1, schedulerLockKey(prefix, id), holder]),
        ),
      );
    },
  };
}
