import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/**
 * The Standard Webhooks specification's retry schedule: after the first attempt, again after
 * 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h, about three days in all
 * (`WEBHOOK_RETRY_SCHEDULE` replaces it).
 */
export const STANDARD_WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  14 * 3_600_000,
  20 * 3_600_000,
  24 * 3_600_000,
];

/**
 * One attempt to send a webhook message to its endpoint (decision 0023). The delivery's row
 * counts the attempts and decides when the next is due: a failed attempt adds the next one's job,
 * delayed by the schedule or the receiver's `Retry-After`. The job's own attempts only outlast
 * errors of the stage (Postgres or Redis away). The id names the delivery, its generation (a
 * replay is a new one) and the attempt, so an attempt queued twice runs once.
 */
export const webhookJob = defineJob({
  queue: 'webhooks',
  name: 'webhooks.deliver-message',
  payload: z.object({
    deliveryId: z.uuid(),
    generation: z.int().min(0),
    /** Which attempt of the delivery this is, from 1. */
    attempt: z.int().min(1),
  }),
  defaults: { attempts: 5, backoff: { type: 'exponential', delay: 5_000 }, ...retention },
  jobId: (p) => `webhook-${p.deliveryId}-${p.generation}-${p.attempt}`,
});
