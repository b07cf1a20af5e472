import { watchOverdueSites, type Database } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { createIntervalLoop, type Sleep } from './interval-loop.js';

export interface SiteWatchOptions {
  db: Database;
  logger: Logger;
  /** A site is overdue when no run of it finished for this many of its intervals. */
  overdueIntervals: number;
  /** Time between looks (`SITE_WATCH_INTERVAL_MS`). */
  intervalMs: number;
  sleep?: Sleep;
}

export interface SiteWatch {
  start(): void;
  stop(): Promise<void>;
  /** One look: raises, refreshes and resolves `overdue` alerts; resolves with what it did. */
  look(): Promise<{ raised: number; open: number; resolved: number }>;
}

/**
 * Watches for sites nothing has run (decision 0021): every look, one idempotent statement raises
 * the `overdue` alert of each enabled site of which no run finished for `overdueIntervals` of its
 * intervals, and resolves those of sites that are no longer overdue. Every scheduler replica runs
 * it; a failed look is logged and tried again at the next.
 */
export function createSiteWatch(options: SiteWatchOptions): SiteWatch {
  const { db, logger, overdueIntervals, intervalMs } = options;
  const look = () => watchOverdueSites(db, overdueIntervals);
  const background = createIntervalLoop(
    async () => {
      try {
        const seen = await look();
        if (seen.raised > 0 || seen.resolved > 0)
          logger.warn(seen, 'site watch: overdue sites changed');
      } catch (error) {
        if (!background.signal.aborted)
          logger.warn({ err: error }, 'site watch: the look failed; tried again at the next');
      }
    },
    intervalMs,
    options.sleep,
  );
  return { start: background.start, stop: background.stop, look };
}
