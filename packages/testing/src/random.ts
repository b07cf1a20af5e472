/**
 * Deterministic randomness for fixture content (mulberry32): the same seed gives the same site,
 * board or resume on every run and machine.
 */

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
}

/** mulberry32: tiny, fast and good enough to make fixture content look varied. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  return {
    next() {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** One stream per item, so item 7 is the same whether there are 10 items or 10,000. */
export function mixSeed(seed: number, stream: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  return (h ^ (h >>> 15)) >>> 0;
}

export function integer(random: Random, min: number, max: number): number {
  return min + Math.floor(random.next() * (max - min + 1));
}

export function chance(random: Random, probability: number): boolean {
  return random.next() < probability;
}

export function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random.next() * items.length)] as T;
}

/** Up to `count` distinct items, in the order drawn. */
export function pickSome<T>(random: Random, items: readonly T[], count: number): T[] {
  const pool = [...items];
  const chosen: T[] = [];
  while (chosen.length < count && pool.length > 0) {
    chosen.push(pool.splice(Math.floor(random.next() * pool.length), 1)[0] as T);
  }
  return chosen;
}
