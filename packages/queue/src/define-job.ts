import type { BackoffStrategy, JobsOptions } from 'bullmq';
import type { z } from 'zod';

export interface JobDefinition<Q extends string, S extends z.ZodType> {
  /** The BullMQ queue (a short noun). */
  queue: Q;
  /** `area.verb-noun`. */
  name: string;
  payload: S;
  /** Attempts, backoff and retention every add starts from. */
  defaults: JobsOptions;
  /** Deterministic id: the dedupe key. Never contains `:` and is never all digits. */
  jobId(payload: z.output<S>): string;
  /** The custom backoff of `defaults.backoff`'s type, set on the queue's workers. */
  backoffStrategy?: BackoffStrategy;
}

export function defineJob<Q extends string, S extends z.ZodType>(
  definition: JobDefinition<Q, S>,
): JobDefinition<Q, S> {
  return definition;
}

/** BullMQ rejects `:` in custom ids and treats all-digit ids as its own counters. */
export function assertValidJobId(id: string): string {
  if (id.includes(':') || /^\d+$/.test(id) || id.length === 0 || id.length > 256) {
    throw new Error(`invalid job id "${id}": must be 1-256 chars, no ':' and not all digits`);
  }
  return id;
}

/** Keep completed jobs an hour for Bull Board; keep failed ones a week for inspection. */
export const retention = {
  removeOnComplete: { age: 3600, count: 5000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} satisfies JobsOptions;
