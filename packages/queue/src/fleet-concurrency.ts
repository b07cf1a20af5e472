import type { WorkQueueName } from './catalogue.js';
import type { Queues } from './queues.js';

/**
 * Caps on jobs at once across every worker replica, per queue: BullMQ's global concurrency,
 * kept in the queue's meta hash in Redis, which each worker's fetch of its next job checks. A
 * worker's own concurrency still applies beneath it. Each replica sets the caps of the queues it
 * serves when it starts, so that a cap changed in the fleet's settings holds once they restart.
 */
export type FleetConcurrency = { readonly [Q in WorkQueueName]?: number };

/**
 * Sets each listed queue's cap (a positive count), or removes it (0); queues not listed are left
 * as they are. Returns the caps as Redis now holds them, `undefined` for none.
 */
export async function applyFleetConcurrency(
  queues: Queues,
  caps: FleetConcurrency,
): Promise<{ [Q in WorkQueueName]?: number | undefined }> {
  const entries = Object.entries(caps) as [WorkQueueName, number][];
  for (const [queue, cap] of entries) {
    if (!Number.isInteger(cap) || cap < 0)
      throw new RangeError(`fleet concurrency of ${queue} must be an integer >= 0, not ${cap}`);
  }
  const applied = await Promise.all(
    entries.map(async ([queue, cap]) => {
      if (cap > 0) await queues[queue].setGlobalConcurrency(cap);
      else await queues[queue].removeGlobalConcurrency();
      const held = await queues[queue].getGlobalConcurrency();
      return [queue, held ?? undefined] as const;
    }),
  );
  return Object.fromEntries(applied);
}
