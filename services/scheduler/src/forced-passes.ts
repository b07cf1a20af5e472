import type { Logger } from '@gleaner/logger';
import { createQueueTelemetry, jobs, queueKeyPrefix, type RedisClient } from '@gleaner/queue';
import { UnrecoverableError, Worker } from 'bullmq';
import type { SchedulerLoop } from './loop.js';

/**
 * Runs the passes asked for through the API (`POST /scheduler/run` adds a `scheduler` job):
 * whichever replica takes the job runs the pass, after any pass of its own under way, and the
 * report becomes the job's result, which the API waits for.
 */
export function startForcedPasses(options: {
  connection: RedisClient;
  prefix: string;
  loop: SchedulerLoop;
  logger: Logger;
}): { close(): Promise<void> } {
  const worker = new Worker(
    'scheduler',
    async (job) => {
      const parsed = jobs.scheduler.payload.safeParse(job.data);
      if (!parsed.success) throw new UnrecoverableError('QUEUE_PAYLOAD_INVALID: scheduler pass');
      return options.loop.runNow(parsed.data.site);
    },
    {
      connection: options.connection,
      prefix: queueKeyPrefix(options.connection, options.prefix, 'scheduler'),
      concurrency: 1,
      // The pass runs in the trace of the API request that asked for it.
      telemetry: createQueueTelemetry(),
    },
  );
  worker.on('error', (error) => options.logger.error({ err: error }, 'forced pass worker error'));
  return { close: () => worker.close() };
}
