import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  forgetSilentWorkers,
  writeWorkerBeat,
  type Database,
  type WorkerCurrentJob,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { createBeatLoop, type BeatLoop } from './beat-loop.js';

/** Jobs a beat names one by one; beyond them it counts them only (`jobs_in_flight`). */
const LISTED_JOBS = 100;

/**
 * A worker process as operators see it (seed 001's heartbeats, for every queue): its row in
 * `worker_heartbeats`, written every interval with the queues it serves, whether it is running,
 * stopping or stopped, the jobs it completed and failed, and the jobs it is running now. `GET
 * /workers` reads the rows and calls a worker silent for two of its intervals that never said
 * stopped dead. The rows of workers silent for a week are deleted as a worker starts.
 */
export interface WorkerHeartbeat extends BeatLoop {
  /** `host-pid-random`: unique per process even when tests run several in one. */
  readonly workerId: string;
  /** A job began here; the returned function ends it, counting how it went. */
  started(job: Omit<WorkerCurrentJob, 'startedAt'>): (outcome: JobOutcome) => void;
}

/** How a job ended here: `released` and `retried later` (delayed) count as neither. */
export type JobOutcome = 'completed' | 'failed' | 'uncounted';

export function createWorkerHeartbeat(options: {
  db: Database;
  logger: Logger;
  queues: readonly string[];
  intervalMs: number;
}): WorkerHeartbeat {
  const { db, logger, queues, intervalMs } = options;
  const workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const startedAt = new Date();
  const current = new Set<WorkerCurrentJob>();
  let jobsCompleted = 0;
  let jobsFailed = 0;
  let first = true;
  const loop = createBeatLoop(
    intervalMs,
    async (phase) => {
      const listed: WorkerCurrentJob[] = [];
      for (const job of current) {
        if (listed.length === LISTED_JOBS) break;
        listed.push(job);
      }
      await writeWorkerBeat(db, {
        workerId,
        hostname: hostname(),
        pid: process.pid,
        queues,
        status: phase,
        jobsCompleted,
        jobsFailed,
        jobsInFlight: current.size,
        currentJobs: listed,
        startedAt,
        intervalMs,
      });
      // Each process starting clears the rows of workers gone for a week.
      if (first) {
        first = false;
        await forgetSilentWorkers(db);
      }
    },
    (error) => logger.warn({ err: error, workerId }, 'could not write the worker heartbeat'),
  );

  return {
    workerId,
    started(job) {
      const entry: WorkerCurrentJob = { ...job, startedAt: new Date().toISOString() };
      current.add(entry);
      return (outcome) => {
        if (!current.delete(entry)) return;
        if (outcome === 'completed') jobsCompleted += 1;
        else if (outcome === 'failed') jobsFailed += 1;
      };
    },
    ...loop,
  };
}
