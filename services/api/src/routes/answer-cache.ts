import { LRUCache } from 'lru-cache';

/**
 * Answers kept by key, for requests that are costly and repeated (searches):
 *
 * - within `ttlMs` of its computation an answer is fresh and served as it is;
 * - for another `ttlMs` it is stale: served at once while one recomputation runs in the
 *   background, so a popular key never makes a request wait for the database;
 * - older, or never computed, the request computes it, and concurrent requests for the same key
 *   wait for that one computation instead of starting their own.
 *
 * Each process keeps answers in memory; with a `shared` store (Redis) a process that has not
 * computed an answer first looks for one another process of the API stored, so a search is
 * computed once per interval, not once per process. A failed computation is not kept (the next
 * request tries again), and a store that fails is passed over.
 */
export interface AnswerCache<V> {
  get(key: string, compute: () => Promise<V>): Promise<V>;
}

/** Where processes share answers: JSON text by key, kept `ttlMs` at most. */
export interface SharedAnswers {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<unknown>;
}

interface Entry<V> {
  value: V;
  computedAt: number;
}

export function createAnswerCache<V>(options: {
  ttlMs: number;
  maxEntries: number;
  shared?: SharedAnswers;
  now?: () => number;
}): AnswerCache<V> {
  if (options.ttlMs <= 0) return { get: (_key, compute) => compute() };
  const { ttlMs, shared } = options;
  const now = options.now ?? Date.now;
  const entries = new LRUCache<string, Entry<V>>({ max: options.maxEntries });
  const computing = new Map<string, Promise<V>>();

  async function computeAndStore(key: string, compute: () => Promise<V>): Promise<V> {
    const value = await compute();
    const entry = { value, computedAt: now() };
    entries.set(key, entry);
    await shared?.set(key, JSON.stringify(entry), 2 * ttlMs).catch(() => undefined);
    return value;
  }

  /** Another process's answer, when it is fresh. */
  async function fromShared(key: string): Promise<Entry<V> | undefined> {
    const text = await shared?.get(key).catch(() => null);
    if (!text) return undefined;
    const entry = JSON.parse(text) as Entry<V>;
    return now() - entry.computedAt < ttlMs ? entry : undefined;
  }

  function once(key: string, run: () => Promise<V>): Promise<V> {
    let pending = computing.get(key);
    if (pending === undefined) {
      pending = run().finally(() => computing.delete(key));
      computing.set(key, pending);
    }
    return pending;
  }

  const refresh = (key: string, compute: () => Promise<V>) =>
    once(key, async () => {
      const stored = await fromShared(key);
      if (stored === undefined) return computeAndStore(key, compute);
      entries.set(key, stored);
      return stored.value;
    });

  return {
    get(key, compute) {
      const entry = entries.get(key);
      const age = entry === undefined ? Infinity : now() - entry.computedAt;
      if (entry !== undefined && age < ttlMs) return Promise.resolve(entry.value);
      if (entry !== undefined && age < 2 * ttlMs) {
        // A failed refresh leaves the stale answer in place until it is too old to serve.
        refresh(key, compute).catch(() => undefined);
        return Promise.resolve(entry.value);
      }
      return refresh(key, compute);
    },
  };
}
