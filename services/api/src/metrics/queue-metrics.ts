import { queueNames, readJobCounts, workQueueNames, type QueueName } from '@gleaner/queue';
import type { Job, Queue } from 'bullmq';
import { Counter, Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/**
 * When a waiting job became due: when it was added, or when the delay it last waited out ended
 * (a retry's backoff, a crawl job parked until its site's slot, a delay it was added with). A job
 * moved to delayed records its new delay from then, close to `processedOn` (its last start).
 */
function dueSince(job: Job): number {
  return (job.processedOn ?? job.timestamp) + (job.delay ?? 0);
}

interface QueueState {
  name: QueueName;
  counts: Record<string, number>;
  workers: number;
  /** Epoch ms since which the job first in line has been due; null when none waits. */
  oldestDueSince: number | null;
}

/**
 * The jobs first in line: the waiting list's end (taken first, the longest there) and the first
 * of the prioritized set (lowest priority value, then first come). One of them has waited longest.
 */
async function readQueue(name: QueueName, queue: Queue): Promise<QueueState> {
  const [counts, workers, waiting, prioritized] = await Promise.all([
    queue.getJobCounts('wait', 'prioritized', 'active', 'delayed', 'failed'),
    queue.getWorkersCount(),
    queue.getJobs(['wait'], 0, 0, true),
    queue.getJobs(['prioritized'], 0, 0, true),
  ]);
  const heads = [...waiting, ...prioritized].filter((job): job is Job => job !== undefined);
  return {
    name,
    counts,
    workers,
    oldestDueSince: heads.length === 0 ? null : Math.min(...heads.map(dueSince)),
  };
}

/**
 * Every queue of the catalogue, from BullMQ's own keys (what `getJobCounts` reads; BullMQ's
 * `exportPrometheusMetrics()` reads the same but repeats HELP and TYPE per queue and has no
 * oldest-job age), and the jobs completed and failed as the workers counted them in Redis.
 */
export const queueMetrics: CollectorFactory = (registry, { queues, redis, prefix }) => {
  const registers = [registry];
  const jobs = new Gauge({
    name: 'gleaner_queue_jobs',
    help: 'Jobs in each queue by state; waiting includes jobs waiting with a priority.',
    labelNames: ['queue', 'state'] as const,
    registers,
  });
  const oldest = new Gauge({
    name: 'gleaner_queue_oldest_waiting_job_age_seconds',
    help: 'How long the job first in line has been due (0 when none waits).',
    labelNames: ['queue'] as const,
    registers,
  });
  const workers = new Gauge({
    name: 'gleaner_queue_workers',
    help: 'Worker connections serving each queue.',
    labelNames: ['queue'] as const,
    registers,
  });
  const completed = new Counter({
    name: 'gleaner_jobs_completed_total',
    help: 'Jobs completed, counted by the workers of every replica.',
    labelNames: ['queue'] as const,
    registers,
  });
  const failed = new Counter({
    name: 'gleaner_jobs_failed_total',
    help: 'Failed job attempts (retried or not) by retry class and error code.',
    labelNames: ['queue', 'error_class', 'code'] as const,
    registers,
  });
  const stalled = new Counter({
    name: 'gleaner_jobs_stalled_total',
    help: 'Jobs whose worker died while running them, moved back to wait by a stall check.',
    labelNames: ['queue'] as const,
    registers,
  });
  const families = [jobs, oldest, workers, completed, failed, stalled];

  return {
    name: 'queues',
    async collect(signal) {
      const [states, counts] = await Promise.all([
        Promise.all(queueNames.map((name) => readQueue(name, queues[name]))),
        readJobCounts(redis, prefix),
      ]);
      const now = Date.now();
      signal.throwIfAborted();
      for (const family of families) family.reset();
      for (const { name, counts: state, workers: connected, oldestDueSince } of states) {
        jobs.set({ queue: name, state: 'waiting' }, (state.wait ?? 0) + (state.prioritized ?? 0));
        for (const key of ['active', 'delayed', 'failed'] as const)
          jobs.set({ queue: name, state: key }, state[key] ?? 0);
        oldest.set(
          { queue: name },
          oldestDueSince === null ? 0 : Math.max(0, now - oldestDueSince) / 1000,
        );
        workers.set({ queue: name }, connected);
      }
      // Every work queue shows from the start, so that a rate over it begins at 0.
      for (const queue of workQueueNames) {
        completed.inc({ queue }, 0);
        stalled.inc({ queue }, 0);
      }
      for (const { queue, count } of counts.completed) completed.inc({ queue }, count);
      for (const { queue, count } of counts.stalled) stalled.inc({ queue }, count);
      for (const { queue, errorClass, code, count } of counts.failed)
        failed.inc({ queue, error_class: errorClass, code }, count);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
