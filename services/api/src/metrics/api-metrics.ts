import { readApiShedCounts } from '@gleaner/queue';
import { Counter } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/** The API itself: the requests its processes refused unstarted, as they counted them in Redis. */
export const apiMetrics: CollectorFactory = (registry, { redis, prefix }) => {
  const shed = new Counter({
    name: 'gleaner_api_requests_shed_total',
    help: 'Requests the API answered 503 without starting them, by reason (in-flight, event-loop-delay, pool-waiting, queue-full, queue-time).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  return {
    name: 'api',
    async collect(signal) {
      const counts = await readApiShedCounts(redis, prefix);
      signal.throwIfAborted();
      shed.reset();
      for (const { reason, count } of counts) shed.inc({ reason }, count);
    },
    clear() {
      shed.reset();
    },
  };
};
