import { describe, expect, it } from 'vitest';
import { createAnswerCache } from './answer-cache.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

describe('createAnswerCache', () => {
  it('computes once for concurrent requests and serves the answer while it is fresh', async () => {
    let clock = 0;
    const cache = createAnswerCache<string>({ ttlMs: 1000, maxEntries: 10, now: () => clock });
    const computed = deferred<string>();
    let calls = 0;
    const compute = () => {
      calls += 1;
      return computed.promise;
    };
    const first = cache.get('k', compute);
    const second = cache.get('k', compute);
    computed.resolve('a');
    expect(await first).toBe('a');
    expect(await second).toBe('a');
    clock = 999;
    expect(await cache.get('k', () => Promise.resolve('b'))).toBe('a');
    expect(calls).toBe(1);
  });

  it('serves a stale answer at once while one refresh runs, then the refreshed one', async () => {
    let clock = 0;
    const cache = createAnswerCache<string>({ ttlMs: 1000, maxEntries: 10, now: () => clock });
    await cache.get('k', () => Promise.resolve('old'));
    clock = 1500;
    const refresh = deferred<string>();
    let refreshes = 0;
    const compute = () => {
      refreshes += 1;
      return refresh.promise;
    };
    expect(await cache.get('k', compute)).toBe('old');
    expect(await cache.get('k', compute)).toBe('old');
    expect(refreshes).toBe(1);
    refresh.resolve('new');
    await refresh.promise;
    await Promise.resolve();
    expect(await cache.get('k', () => Promise.resolve('unused'))).toBe('new');
  });

  it('computes again, and waits, once an answer is too old to serve', async () => {
    let clock = 0;
    const cache = createAnswerCache<string>({ ttlMs: 1000, maxEntries: 10, now: () => clock });
    await cache.get('k', () => Promise.resolve('old'));
    clock = 2000;
    expect(await cache.get('k', () => Promise.resolve('new'))).toBe('new');
  });

  it('keeps no failed computation, and a failed refresh keeps the stale answer', async () => {
    let clock = 0;
    const cache = createAnswerCache<string>({ ttlMs: 1000, maxEntries: 10, now: () => clock });
    await expect(cache.get('k', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('k', () => Promise.resolve('up'))).toBe('up');
    clock = 1200;
    expect(await cache.get('k', () => Promise.reject(new Error('down again')))).toBe('up');
    await new Promise((resolve) => setImmediate(resolve));
    // Still stale, so served while the next refresh runs; that one succeeds.
    expect(await cache.get('k', () => Promise.resolve('fresh'))).toBe('up');
    await new Promise((resolve) => setImmediate(resolve));
    expect(await cache.get('k', () => Promise.resolve('unused'))).toBe('fresh');
  });

  it("takes another process's fresh answer from the shared store instead of computing", async () => {
    let clock = 0;
    const store = new Map<string, string>();
    const shared = {
      get: (key: string) => Promise.resolve(store.get(key) ?? null),
      set: (key: string, value: string) => Promise.resolve(store.set(key, value)),
    };
    const one = createAnswerCache<string>({
      ttlMs: 1000,
      maxEntries: 10,
      shared,
      now: () => clock,
    });
    const two = createAnswerCache<string>({
      ttlMs: 1000,
      maxEntries: 10,
      shared,
      now: () => clock,
    });
    expect(await one.get('k', () => Promise.resolve('computed by one'))).toBe('computed by one');
    clock = 500;
    let computedByTwo = false;
    const compute = () => {
      computedByTwo = true;
      return Promise.resolve('computed by two');
    };
    expect(await two.get('k', compute)).toBe('computed by one');
    expect(computedByTwo).toBe(false);
    // Too old to be fresh in the store: the process computes its own.
    clock = 1200;
    const three = createAnswerCache<string>({
      ttlMs: 1000,
      maxEntries: 10,
      shared,
      now: () => clock,
    });
    expect(await three.get('k', compute)).toBe('computed by two');
    // A store that fails is passed over.
    const broken = {
      get: () => Promise.reject(new Error('down')),
      set: () => Promise.reject(new Error('down')),
    };
    const four = createAnswerCache<string>({ ttlMs: 1000, maxEntries: 10, shared: broken });
    expect(await four.get('k', () => Promise.resolve('alone'))).toBe('alone');
  });

  it('computes every time when turned off', async () => {
    const cache = createAnswerCache<number>({ ttlMs: 0, maxEntries: 10 });
    let calls = 0;
    await cache.get('k', () => Promise.resolve((calls += 1)));
    await cache.get('k', () => Promise.resolve((calls += 1)));
    expect(calls).toBe(2);
  });
});
