import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { writeDocumentWorkerBeat, type Database, type DocumentWorkerStatus } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import type { Queues } from '@gleaner/queue';
import { createBeatLoop, type BeatLoop, type BeatPhase } from '../beat-loop.js';

/**
 * A worker process serving `documents`, as seed 001's heartbeats show it: its row in
 * `document_worker_heartbeats`, written every interval with what it is doing (idle, processing,
 * paused, stopping, stopped) and how many extractions it completed and failed. `GET
 * /documents/status` reads the rows and calls a worker silent for 60 s that never said stopped
 * dead.
 */
export interface DocumentWorker extends BeatLoop {
  /** `host-pid-random`: unique per process even when tests run several in one. */
  readonly workerId: string;
  /** An extraction started here. */
  started(documentId: string): void;
  /** It ended: `completed`, `failed` (retried or given up) or `released` (not counted). */
  finished(documentId: string, outcome: 'completed' | 'failed' | 'released'): void;
}

export function createDocumentWorker(options: {
  db: Database;
  queues: Queues;
  logger: Logger;
  intervalMs: number;
}): DocumentWorker {
  const { db, queues, logger } = options;
  const workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const startedAt = new Date();
  const current = new Set<string>();
  let jobsCompleted = 0;
  let jobsFailed = 0;
  let paused = false;

  async function status(phase: BeatPhase): Promise<DocumentWorkerStatus> {
    if (phase !== 'running') return phase;
    try {
      // BullMQ's pause is queue-wide: every replica stops taking jobs, and each says so here.
      paused = await queues.documents.isPaused();
    } catch {
      // Redis away: the last known answer stands; the beat itself goes to Postgres.
    }
    if (current.size > 0) return 'processing';
    return paused ? 'paused' : 'idle';
  }

  const loop = createBeatLoop(
    options.intervalMs,
    async (phase) => {
      await writeDocumentWorkerBeat(db, {
        workerId,
        hostname: hostname(),
        pid: process.pid,
        status: await status(phase),
        jobsCompleted,
        jobsFailed,
        currentDocumentId: current.values().next().value ?? null,
        startedAt,
      });
    },
    (error) =>
      logger.warn({ err: error, workerId }, 'could not write the document worker heartbeat'),
  );

  return {
    workerId,
    started(documentId) {
      current.add(documentId);
    },
    finished(documentId, outcome) {
      current.delete(documentId);
      if (outcome === 'completed') jobsCompleted += 1;
      else if (outcome === 'failed') jobsFailed += 1;
    },
    ...loop,
  };
}
