import { LRUCache } from 'lru-cache';

/**
 * Answers kept in memory for a few seconds, by key: the same request within `ttlMs` gets the same
 * answer without a query, and concurrent identical requests share one query (the first computes,
 * the others wait for it). A failed computation is not kept. Each API process keeps its own.
 */
export interface AnswerCache<V> {
  get(key: string, compute: () => Promise<V>): Promise<V>;
}

export function createAnswerCache<V extends object>(options: {
  ttlMs: number;
  maxEntries: number;
}): AnswerCache<V> {
  if (options.ttlMs <= 0) return { get: (_key, compute) => compute() };
  const cache = new LRUCache<string, V, () => Promise<V>>({
    max: options.maxEntries,
    ttl: options.ttlMs,
    // Entries expire by age alone; a hit does not extend them.
    updateAgeOnGet: false,
    fetchMethod: (_key, _stale, { context }) => context(),
  });
  return {
    async get(key, compute) {
      const answer = await cache.fetch(key, { context: compute });
      // fetchMethod never resolves undefined (compute always gives a value or throws).
      return answer!;
    },
  };
}
