import type { DeadLetterDeps, DeadLetterSelector, DescribedDeadLetter } from './letter.js';
import { select } from './listing.js';

export interface PurgeReport {
  letters: DescribedDeadLetter[];
  /** Entries removed (with `dryRun`: that would be). */
  purged: number;
  more: boolean;
}

/** Removes the first `limit` dead letters `selector` matches, or with `dryRun` lists them. */
export async function purgeDeadLetters(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { limit: number; dryRun: boolean; maxScan?: number },
): Promise<PurgeReport> {
  const { letters, more } = await select(deps, selector, options.limit, options.maxScan);
  if (options.dryRun) return { letters, purged: letters.length, more };
  const removed = await Promise.all(
    letters.map((letter) => deps.queues['dead-letter'].remove(letter.id)),
  );
  return { letters, purged: removed.filter((code) => code === 1).length, more };
}
