import { noRepairs, readSchedulerCounts, readSchedulerReplicas } from '@gleaner/queue';
import { Counter, Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/** `crawlRequeued` → `crawl_requeued`: label values in the style of the rest. */
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * The scheduler: passes and repairs as every replica added them to Redis after each pass (with
 * its published status, `writeSchedulerReplica`), and the replicas' liveness from those statuses.
 */
export const schedulerMetrics: CollectorFactory = (registry, { redis, prefix }) => {
  const registers = [registry];
  const passes = new Counter({
    name: 'gleaner_scheduler_passes_total',
    help: 'Scheduling passes by trigger (interval or request) and outcome (complete, or incomplete when a store did not answer).',
    labelNames: ['trigger', 'outcome'] as const,
    registers,
  });
  const repairs = new Counter({
    name: 'gleaner_scheduler_repairs_total',
    help: "The reconciler's repairs by kind (work re-enqueued, rows settled, runs closed).",
    labelNames: ['repair'] as const,
    registers,
  });
  const started = new Counter({
    name: 'gleaner_scheduler_runs_started_total',
    help: 'Runs the scheduler started.',
    registers,
  });
  const replicas = new Gauge({
    name: 'gleaner_scheduler_replicas',
    help: 'Scheduler replicas that reported within the last hour, alive (within three intervals) or not.',
    labelNames: ['state'] as const,
    registers,
  });
  const lastPass = new Gauge({
    name: 'gleaner_scheduler_last_pass_timestamp_seconds',
    help: 'When the latest pass of any replica ended (Unix time; 0: none yet).',
    registers,
  });
  const families = [passes, repairs, started, replicas, lastPass];

  return {
    name: 'scheduler',
    async collect(signal) {
      const [counts, statuses] = await Promise.all([
        readSchedulerCounts(redis, prefix),
        readSchedulerReplicas(redis, prefix),
      ]);
      signal.throwIfAborted();
      for (const family of families) family.reset();
      for (const trigger of ['interval', 'request'])
        for (const outcome of ['complete', 'incomplete']) passes.inc({ trigger, outcome }, 0);
      for (const { trigger, outcome, count } of counts.passes)
        passes.inc({ trigger, outcome }, count);
      for (const repair of Object.keys(noRepairs())) repairs.inc({ repair: snakeCase(repair) }, 0);
      for (const { repair, count } of counts.repairs)
        repairs.inc({ repair: snakeCase(repair) }, count);
      started.inc(counts.runsStarted);
      const alive = statuses.filter((status) => status.alive).length;
      replicas.set({ state: 'alive' }, alive);
      replicas.set({ state: 'silent' }, statuses.length - alive);
      const ends = statuses.flatMap((status) =>
        status.lastPass ? [Date.parse(status.lastPass.startedAt) + status.lastPass.durationMs] : [],
      );
      lastPass.set(ends.length === 0 ? 0 : Math.max(...ends) / 1000);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
