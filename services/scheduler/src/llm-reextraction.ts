import { randomUUID } from 'node:crypto';
import {
  queueLlmReextractionBatch,
  startLlmReextraction,
  type Database,
  type ReextractionBatch,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { enqueueLlmExtractions, type LlmQueueSettings, type Queues } from '@gleaner/queue';
import { sleepUnlessAborted, type Sleep } from './interval-loop.js';

/** A batch every 10 s at most: small batches, so the pace holds within seconds. */
const DEFAULT_BATCH_INTERVAL_MS = 10_000;

export interface LlmReextractorOptions {
  db: Database;
  queues: Queues;
  logger: Logger;
  /** The current prompt version and how its jobs are added (`EXTRACTION_*`). */
  settings: LlmQueueSettings;
  /** Extractions queued again per minute at most (`EXTRACTION_REEXTRACT_PER_MINUTE`, > 0). */
  perMinute: number;
  /** Time between two batches; the batch is the pace's share of it. Tests shorten it. */
  batchIntervalMs?: number;
  /** Waits between steps; rejects when `signal` aborts. */
  sleep?: Sleep;
}

export interface LlmReextractor {
  /** Starts the loop (once). */
  start(): void;
  /** Stops the loop, mid-sleep at once; a batch under way is committed or rolled back first. */
  stop(): Promise<void>;
  /** One step: starts the re-extraction if needed, queues a batch when one is due. */
  step(): Promise<ReextractionBatch>;
}

/**
 * Prompt upgrades reach stored results (decision 0009, "Prompt upgrades"): the resumes whose
 * fields an older `EXTRACTION_VERSION` produced are queued for extraction under the current one,
 * with no operator's requeue. Every scheduler replica runs this loop; the re-extraction's row in
 * Postgres holds the cursor and the time of the next batch, and is locked while a batch is
 * queued, so replicas take turns and the pace holds across them. Each batch is the pace's share
 * of `batchIntervalMs` and waits while a backlog of twice that is queued (the provider is the
 * slower one then, and fresh uploads are not held up behind re-extractions). Jobs are added
 * after the batch commits, with ids of subject and version; one lost in between is re-added by
 * the reconciler, which re-adds any queued extraction whose job Redis lacks.
 */
export function createLlmReextractor(options: LlmReextractorOptions): LlmReextractor {
  const { db, queues, logger, settings, perMinute } = options;
  const sleep = options.sleep ?? sleepUnlessAborted;
  const batchIntervalMs = options.batchIntervalMs ?? DEFAULT_BATCH_INTERVAL_MS;
  const batchSize = Math.max(1, Math.round((perMinute * batchIntervalMs) / 60_000));
  // The interval that keeps `batchSize` at `perMinute` exactly, whatever the rounding did.
  const intervalMs = Math.round((batchSize * 60_000) / perMinute);
  const log = logger.child({ component: 'llm-reextraction', version: settings.version });
  const controller = new AbortController();
  let looping: Promise<void> | undefined;
  let started = false;

  async function step(): Promise<ReextractionBatch> {
    if (!started) {
      const start = await startLlmReextraction(db, settings.version);
      started = true;
      if (!start.started) {
        log.warn(
          { newerVersion: start.newerVersion },
          'a newer prompt version is re-extracting already; this version re-extracts nothing',
        );
        return { outcome: 'idle' };
      }
      const { reextraction } = start;
      log.info(
        { status: reextraction.status, total: reextraction.total, queued: reextraction.queued },
        'llm re-extraction',
      );
    }
    const batch = await queueLlmReextractionBatch(db, {
      version: settings.version,
      limit: batchSize,
      intervalMs,
      maxQueued: 2 * batchSize,
      correlationId: `reextract-${randomUUID()}`,
    });
    if (batch.outcome === 'queued') {
      if (batch.work.length > 0) await enqueueLlmExtractions(queues, batch.work, settings);
      log.info(
        { queued: batch.work.length, completed: batch.completed },
        batch.completed ? 'llm re-extraction completed' : 'llm re-extraction batch queued',
      );
    } else if (batch.outcome === 'backlogged') {
      log.debug({ queuedNow: batch.queuedNow }, 'llm re-extraction waits for the queue to drain');
    }
    return batch;
  }

  /** How long to wait after a step before the next. */
  function pause(batch: ReextractionBatch): number | undefined {
    switch (batch.outcome) {
      case 'idle':
        return undefined;
      case 'paced':
        return batch.waitMs;
      case 'queued':
        return batch.completed ? undefined : intervalMs;
      case 'backlogged':
        return Math.min(intervalMs, 1_000);
    }
  }

  async function loop(): Promise<void> {
    const { signal } = controller;
    while (!signal.aborted) {
      let waitMs: number | undefined;
      try {
        waitMs = pause(await step());
      } catch (error) {
        if (signal.aborted) return;
        log.warn({ err: error }, 'llm re-extraction step failed; retried after its interval');
        waitMs = intervalMs;
      }
      // Done, or another version's to do: nothing more for this process.
      if (waitMs === undefined) return;
      try {
        await sleep(waitMs, signal);
      } catch {
        return; // aborted: stop() was called
      }
    }
  }

  return {
    start() {
      looping ??= loop();
    },
    async stop() {
      controller.abort();
      await looping;
    },
    step,
  };
}
