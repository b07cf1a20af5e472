import { PassThrough } from 'node:stream';
import { createLogger } from '@gleaner/logger';
import { writeSchedulerReplica } from '@gleaner/queue';
import {
  createReconciler,
  createSchedulePass,
  createSchedulerLoop,
  createSiteLocks,
  startForcedPasses,
  type SchedulerLoop,
} from '@gleaner/scheduler';
import type { Redis } from 'ioredis';
import type { InProcessSystem } from './in-process-system.js';

/**
 * One scheduler replica on an in-process system, wired as the scheduler's main.ts wires it: its
 * passes published (and counted) through Redis, forced passes taken from its queue. A long
 * interval: after its first pass, it passes only when asked to.
 */
export function startTestScheduler(
  system: InProcessSystem,
  { producer, connection }: { producer: Redis; connection: Redis },
): { loop: SchedulerLoop; forced: { close(): Promise<void> } } {
  const { db } = system.handle;
  const prefix = system.namespace.prefix;
  const logger = createLogger({ service: 'test', level: 'silent', destination: new PassThrough() });
  const pass = createSchedulePass({
    db,
    queues: system.queues,
    logger,
    replica: 'replica-1',
    batchSize: 100,
    locks: createSiteLocks({ redis: producer, prefix, holder: 'replica-1', ttlMs: 5_000 }),
    reconciler: createReconciler({
      db,
      queues: system.queues,
      logger,
      runDeadlineMs: 3_600_000,
      graceMs: 30_000,
    }),
  });
  const loop = createSchedulerLoop({
    replica: 'replica-1',
    intervalMs: 3_600_000,
    logger,
    pass,
    publish: (status) => writeSchedulerReplica(producer, prefix, status),
  });
  loop.start();
  const forced = startForcedPasses({ connection, prefix, loop, logger });
  return { loop, forced };
}
