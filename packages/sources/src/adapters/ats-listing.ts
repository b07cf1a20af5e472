import type { ListOptions } from '../types.js';

/**
 * Collects a listing's entries under a budget (the caller's limit and the config's
 * maxPostings), dropping repeats: a posting published while we page shifts later pages by one,
 * so the same posting can come back on the next page.
 */
export class ListingBudget<T> {
  readonly items: T[] = [];
  /** Set when an entry had to be dropped because the budget was spent. */
  truncated = false;
  private readonly seen = new Set<string>();

  constructor(readonly limit: number) {}

  static for<T>(options: ListOptions, maxPostings: number): ListingBudget<T> {
    return new ListingBudget<T>(Math.max(0, Math.min(options.limit ?? Infinity, maxPostings)));
  }

  get full(): boolean {
    return this.items.length >= this.limit;
  }

  add(key: string, item: T): void {
    if (this.seen.has(key)) return;
    if (this.full) {
      this.truncated = true;
      return;
    }
    this.seen.add(key);
    this.items.push(item);
  }
}

/**
 * Remembers the pages seen so far by their ids: a vendor that ignores `skip`/`offset` answers
 * the same page forever, and the page budget alone would take 200 requests to notice.
 */
export class RepeatedPageGuard {
  private readonly signatures = new Set<string>();

  /** True when a non-empty page with exactly these ids came before. */
  isRepeat(ids: readonly string[]): boolean {
    if (ids.length === 0) return false;
    const signature = ids.join('\u0000');
    if (this.signatures.has(signature)) return true;
    this.signatures.add(signature);
    return false;
  }
}
