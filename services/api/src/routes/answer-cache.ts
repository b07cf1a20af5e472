import { LRUCache } from 'lru-cache';

/**
 * Answers kept in memory by key, for requests that are costly and repeated (searches):
 *
 * - within `ttlMs` of its computation an answer is fresh and served as it is;
 * - for another `ttlMs` it is stale: served at once while one recomputation runs in the
 *   background, so a popular key never makes a request wait for the database;
 * - older, or never computed, the request computes it, and concurrent requests for the same key
 *   wait for that one computation instead of starting their own.
 *
 * A failed computation is not kept (the next request tries again). Each API process keeps its own.
 */
export interface AnswerCache<V> {
  get(key: string, compute: () => Promise<V>): Promise<V>;
}

interface Entry<V> {
  value: V;
  computedAt: number;
}

export function createAnswerCache<V>(options: {
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}): AnswerCache<V> {
  if (options.ttlMs <= 0) return { get: (_key, compute) => compute() };
  const now = options.now ?? Date.now;
  const entries = new LRUCache<string, Entry<V>>({ max: options.maxEntries });
  const computing = new Map<string, Promise<V>>();

  function computeOnce(key: string, compute: () => Promise<V>): Promise<V> {
    let pending = computing.get(key);
    if (pending === undefined) {
      pending = compute()
        .then((value) => {
          entries.set(key, { value, computedAt: now() });
          return value;
        })
        .finally(() => computing.delete(key));
      computing.set(key, pending);
    }
    return pending;
  }

  return {
    get(key, compute) {
      const entry = entries.get(key);
      const age = entry === undefined ? Infinity : now() - entry.computedAt;
      if (entry !== undefined && age < options.ttlMs) return Promise.resolve(entry.value);
      if (entry !== undefined && age < 2 * options.ttlMs) {
        // A failed refresh leaves the stale answer in place until it is too old to serve.
        computeOnce(key, compute).catch(() => undefined);
        return Promise.resolve(entry.value);
      }
      return computeOnce(key, compute);
    },
  };
}
