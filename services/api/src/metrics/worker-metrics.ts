import { listWorkers, workerStatuses } from '@gleaner/db';
import { Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/** Per-worker series stop at this many workers (the rest are counted in `gleaner_workers`). */
const MAX_LABELLED_WORKERS = 500;

/**
 * Worker processes as their heartbeats show them (`GET /workers`): how many are running,
 * stopping, stopped or dead, and each live one's jobs in flight and seconds since its last beat.
 */
export const workerMetrics: CollectorFactory = (registry, { db }) => {
  const registers = [registry];
  const workers = new Gauge({
    name: 'gleaner_workers',
    help: 'Worker processes by status (dead: silent for two of their heartbeat intervals).',
    labelNames: ['status'] as const,
    registers,
  });
  const inFlight = new Gauge({
    name: 'gleaner_worker_jobs_in_flight',
    help: 'Jobs each live worker process is running, as of its last heartbeat.',
    labelNames: ['worker'] as const,
    registers,
  });
  const silent = new Gauge({
    name: 'gleaner_worker_heartbeat_age_seconds',
    help: 'Seconds since each worker process that has not stopped last beat.',
    labelNames: ['worker'] as const,
    registers,
  });
  const families = [workers, inFlight, silent];
  return {
    name: 'workers',
    async collect(signal) {
      const listed = await listWorkers(db);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      for (const status of [...workerStatuses, 'dead'] as const)
        workers.set({ status }, listed.filter((w) => w.effectiveStatus === status).length);
      for (const worker of listed
        .filter((w) => w.effectiveStatus !== 'stopped')
        .slice(0, MAX_LABELLED_WORKERS)) {
        silent.set({ worker: worker.workerId }, worker.silentMs / 1000);
        if (worker.effectiveStatus !== 'dead')
          inFlight.set({ worker: worker.workerId }, worker.jobsInFlight);
      }
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
