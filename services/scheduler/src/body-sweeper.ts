import {
  deleteUnreferencedBodies,
  recordBodySweep,
  trimPostingChanges,
  trimWebhookDeliveries,
  trimPostingHistory,
  type BodyBatch,
  type BodySweepReport,
  type Database,
  type HistoryBatch,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { createIntervalLoop, sleepUnlessAborted, type Sleep } from './interval-loop.js';
import type { SiteLocks } from './locks.js';

export interface BodySweeperOptions {
  db: Database;
  logger: Logger;
  /** This replica's name in reports and the lease's value. */
  replica: string;
  /**
   * The sweep's lease, one lock named `body-sweeper` whose expiry is the interval: the replica
   * that takes it sweeps, and nobody sweeps again before it expires, however many replicas run.
   */
  locks: SiteLocks;
  /** Time between passes (`BODY_SWEEP_INTERVAL_MS`). */
  intervalMs: number;
  /** Bodies stored this recently are kept even when nothing points at them (`BODY_SWEEP_GRACE_MS`). */
  graceMs: number;
  /** Bodies, or postings' histories, per statement (`BODY_SWEEP_BATCH_SIZE`). */
  batchSize: number;
  /** Pause between two statements (`BODY_SWEEP_PAUSE_MS`). */
  pauseMs: number;
  /** Versions kept per posting (`POSTING_HISTORY_VERSIONS`). */
  historyVersions: number;
  /** How long change feed events are kept (`CHANGE_FEED_RETENTION_DAYS`, in ms). */
  changeRetentionMs: number;
  /** Waits between batches and passes; rejects when `signal` aborts. Tests count the pauses. */
  sleep?: Sleep;
}

export interface BodySweeper {
  /** Starts the loop: a pass now if this replica takes the lease, then one per interval. */
  start(): void;
  /** Stops the loop, mid-sleep at once; a pass under way ends after its current statement. */
  stop(): Promise<void>;
  /**
   * One pass, lease or not: trims every posting's history, then deletes the bodies nothing points
   * at, then the change feed's events and settled webhook deliveries past their retention. Never throws: a failure ends the pass and is its report's `error`; the next pass retries.
   */
  pass(overrides?: { graceMs?: number; changeRetentionMs?: number }): Promise<BodySweepReport>;
}

/** The lease's lock name: site ids are UUIDs, so it cannot be a site's. */
const LEASE = 'body-sweeper';

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Keeps storage bounded (decision 0014): page bodies are content-addressed and shared, so no
 * single delete of a site or a posting can know that a body is free; a pass walks them all
 * instead, throttled so that it never competes with the pipeline — one statement per batch and
 * a pause between batches. Postings' histories are trimmed first, so the bodies only the trimmed
 * versions pointed at go in the same pass. Each pass logs one line and is kept as an audit entry
 * (`storage.sweep`), which `GET /admin/storage` shows.
 */
export function createBodySweeper(options: BodySweeperOptions): BodySweeper {
  const { db, logger, replica, locks, intervalMs, batchSize, pauseMs } = options;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const background = createIntervalLoop(
    async () => {
      try {
        const held = await locks.acquire([LEASE]);
        if (held.has(LEASE)) await pass();
        else logger.debug('body sweep left to the replica holding its lease');
      } catch (error) {
        logger.warn({ err: error }, 'body sweep skipped: its lease could not be taken');
      }
    },
    intervalMs,
    sleep,
  );
  const { signal } = background;

  async function pass(
    overrides: { graceMs?: number; changeRetentionMs?: number } = {},
  ): Promise<BodySweepReport> {
    const graceMs = overrides.graceMs ?? options.graceMs;
    const changeRetentionMs = overrides.changeRetentionMs ?? options.changeRetentionMs;
    const started = Date.now();
    const report: BodySweepReport = {
      replica,
      startedAt: new Date(started).toISOString(),
      durationMs: 0,
      postingsWithHistory: 0,
      versionsTrimmed: 0,
      bodiesScanned: 0,
      bodiesDeleted: 0,
      changesTrimmed: 0,
      webhookDeliveriesTrimmed: 0,
      bytesFreed: 0,
      stopped: false,
      error: null,
    };
    let statements = 0;
    /** False once the scheduler is stopping; pauses before every statement but the first. */
    async function mayContinue(): Promise<boolean> {
      try {
        if (statements > 0 && !signal.aborted) await sleep(pauseMs, signal);
      } catch {
        // Aborted mid-pause: stop() was called.
      }
      statements += 1;
      report.stopped = signal.aborted;
      return !signal.aborted;
    }

    try {
      let posting: string | null = null;
      while (await mayContinue()) {
        const batch: HistoryBatch = await trimPostingHistory(db, {
          after: posting,
          limit: batchSize,
          keep: options.historyVersions,
        });
        report.postingsWithHistory += batch.postings;
        report.versionsTrimmed += batch.trimmed;
        posting = batch.last;
        if (batch.postings < batchSize) break;
      }
      let body: string | null = null;
      while (!report.stopped && (await mayContinue())) {
        const batch: BodyBatch = await deleteUnreferencedBodies(db, {
          after: body,
          limit: batchSize,
          graceMs,
        });
        report.bodiesScanned += batch.scanned;
        report.bodiesDeleted += batch.deleted;
        report.bytesFreed += batch.bytesFreed;
        body = batch.last;
        if (batch.scanned < batchSize) break;
      }
      const before = new Date(started - changeRetentionMs);
      while (!report.stopped && (await mayContinue())) {
        const trimmed = await trimPostingChanges(db, { before, limit: batchSize });
        report.changesTrimmed += trimmed;
        if (trimmed < batchSize) break;
      }
      // Settled webhook deliveries go at the change feed's retention too.
      while (!report.stopped && (await mayContinue())) {
        const trimmed = await trimWebhookDeliveries(db, { before, limit: batchSize });
        report.webhookDeliveriesTrimmed += trimmed;
        if (trimmed < batchSize) break;
      }
    } catch (error) {
      report.error = message(error);
    }
    report.durationMs = Date.now() - started;

    if (report.error) logger.warn(report, 'body sweep failed; the next pass retries');
    else logger.info(report, report.stopped ? 'body sweep stopped' : 'body sweep');
    await recordBodySweep(db, report).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not record the body sweep');
    });
    return report;
  }

  return { start: background.start, stop: background.stop, pass };
}
