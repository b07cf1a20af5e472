import { duplicateConnection, type RedisClient } from '@gleaner/queue';
import { authenticateApiKey, stampApiKeysUsed, type ApiKeyRow, type Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { LRUCache } from 'lru-cache';

/** The key a request was made with (null on public routes called without one). */
export type Principal = Pick<ApiKeyRow, 'id' | 'name' | 'prefix' | 'role' | 'tenantId'>;

/** A key this process has not seen working, from an address that has failed too often. */
export const THROTTLED = 'throttled';

export interface KeyLookup {
  /**
   * The live key `key` is, or undefined. A key this process has not seen working is looked up only
   * when `mayQuery` allows it (its address has not failed too often); `THROTTLED` otherwise.
   */
  authenticate(
    key: string,
    mayQuery?: () => Promise<boolean>,
  ): Promise<Principal | undefined | typeof THROTTLED>;
  /** The key `id` was revoked: forget it here, and tell every other API process. */
  revoked(id: string): Promise<void>;
  /** Stamps the last uses and leaves the revocation channel. */
  close(): Promise<void>;
}

/**
 * A good key is answered from memory for 10 s, then checked again with one `SELECT`. Revocations
 * reach every process at once through Redis; the 10 s bound what a lost message can cost.
 */
const GOOD_KEY_MS = 10_000;
const GOOD_KEYS = 10_000;
/**
 * Unknown and revoked keys, apart from the good ones, so that a flood of made-up keys cannot push
 * a good key out. A minute, so a client retrying one wrong key costs one query a minute.
 */
const BAD_KEY_MS = 60_000;
const BAD_KEYS = 10_000;
/** `last_used_at` is a day-to-day hint for operators: one `UPDATE` every few seconds is plenty. */
const STAMP_EVERY_MS = 5_000;

export interface KeyLookupOptions {
  db: Database;
  /** A connection to duplicate for the revocation channel (a subscriber does nothing else). */
  redis: RedisClient;
  /** The queues' Redis prefix; the channel is `<prefix>:api-keys:revoked`. */
  prefix: string;
  logger: Logger;
  now?: () => number;
}

/**
 * API keys as `db` knows them, with a cache for good keys and another for bad ones, stamps of
 * use written in batches, and revocations shared through Redis pub/sub.
 */
export function createKeyLookup(options: KeyLookupOptions): KeyLookup {
  const { db, logger, now = Date.now } = options;
  const channel = `${options.prefix}:api-keys:revoked`;
  /** Good keys; one past its `until` is still known to have worked, so it is always checked. */
  const good = new LRUCache<string, { principal: Principal; until: number }>({ max: GOOD_KEYS });
  const bad = new LRUCache<string, true>({ max: BAD_KEYS, ttl: BAD_KEY_MS });
  const used = new Set<string>();

  const forgetKey = (id: string) => {
    for (const [key, entry] of good.entries()) if (entry.principal.id === id) good.delete(key);
  };

  const subscriber = duplicateConnection(options.redis, {
    connectionName: 'gleaner-api-key-revocations',
    // A subscriber waits for its connection rather than failing its SUBSCRIBE.
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
  });
  subscriber.on('error', (error: unknown) =>
    logger.warn({ err: error }, 'API key revocation channel: Redis error'),
  );
  subscriber.on('message', (from: string, id: string) => {
    if (from === channel) forgetKey(id);
  });
  let subscribed = false;
  subscriber.on('ready', () => {
    // Revocations sent while the subscription was down were lost: check every key again.
    if (subscribed) good.clear();
  });
  subscriber.subscribe(channel).then(
    () => {
      subscribed = true;
    },
    (error: unknown) => logger.warn({ err: error }, 'API key revocation channel: not subscribed'),
  );

  async function stamp(): Promise<void> {
    if (used.size === 0) return;
    const ids = [...used];
    used.clear();
    try {
      await stampApiKeysUsed(db, ids);
    } catch (error) {
      logger.warn({ err: error, keys: ids.length }, 'API keys: last use not stamped');
    }
  }
  const stamping = setInterval(() => void stamp(), STAMP_EVERY_MS);
  stamping.unref();

  let closing: Promise<void> | undefined;
  return {
    async authenticate(key, mayQuery) {
      const known = good.get(key);
      if (known !== undefined && known.until > now()) {
        used.add(known.principal.id);
        return known.principal;
      }
      if (bad.has(key)) return undefined;
      if (known === undefined && mayQuery !== undefined && !(await mayQuery())) return THROTTLED;
      const row = await authenticateApiKey(db, key);
      if (row === undefined) {
        good.delete(key);
        bad.set(key, true);
        return undefined;
      }
      const principal: Principal = {
        id: row.id,
        name: row.name,
        prefix: row.prefix,
        role: row.role,
        tenantId: row.tenantId,
      };
      good.set(key, { principal, until: now() + GOOD_KEY_MS });
      used.add(principal.id);
      return principal;
    },
    async revoked(id) {
      forgetKey(id);
      try {
        await options.redis.publish(channel, id);
      } catch (error) {
        logger.warn(
          { err: error, key: id },
          'API key revocation not published: other API processes refuse the key within 10 s',
        );
      }
    },
    close() {
      closing ??= (async () => {
        clearInterval(stamping);
        await stamp();
        await subscriber.quit().catch(() => subscriber.disconnect());
      })();
      return closing;
    },
  };
}
