import { randomUUID } from 'node:crypto';
import { findScheduledSite, listDueSites, type Database, type DueSite } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import {
  noRepairs,
  startScheduledRuns,
  type PassReport,
  type PassSkipReason,
  type Queues,
} from '@gleaner/queue';
import type { BackfillResumer } from './backfill.js';
import type { Reconciler } from './reconciler.js';
import type { SiteLocks } from './locks.js';

export interface SchedulePassOptions {
  db: Database;
  queues: Queues;
  logger: Logger;
  locks: SiteLocks;
  reconciler: Reconciler;
  /** Queues the next batch of a running extractor backfill whose job Redis lost. */
  backfills?: BackfillResumer;
  /** This replica's name in reports and lock values. */
  replica: string;
  /** Due sites started per statement (`SCHEDULER_BATCH_SIZE`). */
  batchSize: number;
  /** Batches per pass at most: a backlog beyond that waits for the next pass. */
  maxBatches?: number;
}

/** Runs listed by name in a report; the count covers all. */
const REPORTED_RUNS = 50;

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * One scheduling pass: takes the due sites in batches (longest overdue first), locks them in
 * Redis, starts their runs and moves their schedules on in one statement per batch, queues the
 * scrape jobs, then lets the reconciler repair what Redis lost. A store that does not answer
 * ends that part of the pass, not the pass: without Redis no run starts (its job could not be
 * queued) and the sites stay due for the next pass; without Postgres nothing can be done. The
 * report says which.
 */
export function createSchedulePass(options: SchedulePassOptions) {
  const { db, queues, logger, locks, reconciler, backfills, replica, batchSize } = options;
  const maxBatches = options.maxBatches ?? 20;

  /** Starts one batch of due sites; returns how many of them it moved on to their next slot. */
  async function startBatch(
    sites: DueSite[],
    report: PassReport,
    correlationId: string,
  ): Promise<number> {
    const skip = (reason: PassSkipReason, count = 1) => {
      if (count > 0) report.skipped[reason] = (report.skipped[reason] ?? 0) + count;
    };
    let held: Set<string>;
    try {
      held = await locks.acquire(sites.map((site) => site.id));
    } catch (error) {
      report.redis = 'unavailable';
      report.errors.push(`redis: ${message(error)}`);
      return 0;
    }
    skip('locked', sites.length - held.size);
    let movedOn = 0;
    const mine = sites.filter((site) => held.has(site.id));
    try {
      const { outcomes, started, enqueueError } = await startScheduledRuns(
        { db, queues },
        mine.map((site) => ({ siteId: site.id, slot: site.nextRunAt })),
        correlationId,
      );
      const names = new Map(sites.map((site) => [site.id, site.siteName]));
      for (const outcome of outcomes.values()) {
        if (outcome !== 'started') skip(outcome);
        if (outcome !== 'taken') movedOn += 1;
      }
      report.startedCount += started.length;
      for (const run of started) {
        if (report.started.length < REPORTED_RUNS)
          report.started.push({ site: names.get(run.siteId) ?? run.siteId, runId: run.runId });
        logger.info(
          { runId: run.id, publicRunId: run.runId, siteId: run.siteId, trigger: 'schedule' },
          'scheduled run started',
        );
      }
      if (enqueueError) {
        report.redis = 'unavailable';
        report.errors.push(
          `redis: ${started.length} runs started but their scrape jobs could not be queued (the reconciler will): ${enqueueError.message}`,
        );
      }
    } catch (error) {
      report.postgres = 'unavailable';
      report.errors.push(`postgres: ${message(error)}`);
      return 0;
    } finally {
      await locks.release([...held]).catch(() => undefined);
    }
    return movedOn;
  }

  return async function runPass(
    trigger: PassReport['trigger'],
    site?: string,
  ): Promise<PassReport> {
    const started = performance.now();
    const correlationId = `pass-${randomUUID()}`;
    const report: PassReport = {
      replica,
      trigger,
      site: site ?? null,
      startedAt: new Date().toISOString(),
      durationMs: 0,
      due: 0,
      started: [],
      startedCount: 0,
      skipped: {},
      repairs: noRepairs(),
      redis: 'ok',
      postgres: 'ok',
      errors: [],
    };
    try {
      if (site !== undefined) {
        const found = await findScheduledSite(db, site);
        if (!found) report.errors.push(`site "${site}" is not registered`);
        else if (!found.enabled) report.skipped.disabled = 1;
        else {
          report.due = 1;
          await startBatch([found], report, correlationId);
        }
      } else {
        for (let batch = 0; batch < maxBatches; batch += 1) {
          const due = await listDueSites(db, batchSize);
          report.due += due.length;
          if (due.length === 0) break;
          // Sites left due (locked or held by another replica) would be read again: stop when a
          // batch moved none on, or when it was the last.
          const movedOn = await startBatch(due, report, correlationId);
          if (movedOn === 0 || due.length < batchSize) break;
        }
      }
    } catch (error) {
      report.postgres = 'unavailable';
      report.errors.push(`postgres: ${message(error)}`);
    }

    if (report.postgres === 'ok' && site === undefined) {
      try {
        report.repairs = await reconciler.reconcile({ redis: report.redis === 'ok' });
      } catch (error) {
        report.errors.push(`reconciler: ${message(error)}`);
      }
      if (backfills && report.redis === 'ok') {
        try {
          await backfills();
        } catch (error) {
          report.errors.push(`backfill: ${message(error)}`);
        }
      }
    }
    report.durationMs = Math.round(performance.now() - started);
    return report;
  };
}

export type SchedulePass = ReturnType<typeof createSchedulePass>;
