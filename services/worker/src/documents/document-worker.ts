import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { writeDocumentWorkerBeat, type Database, type DocumentWorkerStatus } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import type { Queues } from '@gleaner/queue';

/**
 * A worker process serving `documents`, as seed 001's heartbeats show it: its row in
 * `document_worker_heartbeats`, written every interval with what it is doing (idle, processing,
 * paused, stopping, stopped) and how many extractions it completed and failed. `GET
 * /documents/status` reads the rows and calls a worker silent for 60 s that never said stopped
 * dead.
 */
export interface DocumentWorker {
  /** `host-pid-random`: unique per process even when tests run several in one. */
  readonly workerId: string;
  /** An extraction started here. */
  started(documentId: string): void;
  /** It ended: `completed`, `failed` (retried or given up) or `released` (not counted). */
  finished(documentId: string, outcome: 'completed' | 'failed' | 'released'): void;
  /** Writes a beat now: the first one, and between intervals when the status changed. */
  beat(): Promise<void>;
  /** The shutdown began: the beats say `stopping`. */
  stopping(): Promise<void>;
  /** The last beat, `stopped`; no more after it. Idempotent. */
  stop(): Promise<void>;
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
  let phase: 'running' | 'stopping' | 'stopped' = 'running';
  let paused = false;
  let stopWritten = false;
  let writing: Promise<void> = Promise.resolve();

  async function status(): Promise<DocumentWorkerStatus> {
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

  function write(): Promise<void> {
    // One beat at a time, in order: a `stopped` beat is never overtaken by an older one.
    writing = writing.then(async () => {
      if (phase === 'stopped' && stopWritten) return;
      const beatStatus = await status();
      try {
        await writeDocumentWorkerBeat(db, {
          workerId,
          hostname: hostname(),
          pid: process.pid,
          status: beatStatus,
          jobsCompleted,
          jobsFailed,
          currentDocumentId: current.values().next().value ?? null,
          startedAt,
        });
        if (beatStatus === 'stopped') stopWritten = true;
      } catch (error) {
        logger.warn({ err: error, workerId }, 'could not write the document worker heartbeat');
      }
    });
    return writing;
  }

  const timer = setInterval(() => void write(), options.intervalMs);
  timer.unref();

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
    beat: write,
    async stopping() {
      if (phase === 'running') phase = 'stopping';
      await write();
    },
    async stop() {
      clearInterval(timer);
      phase = 'stopped';
      await write();
    },
  };
}
