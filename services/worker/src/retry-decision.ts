import { isClassifiedError } from '@gleaner/errors';
import { UnrecoverableError, type Job } from 'bullmq';

/**
 * The worker boundary's one rule for retry-or-give-up (STYLE.md, convention 6): a permanent error
 * is never retried, and a job on its last attempt is not retried either. The runtime applies it;
 * a handler that records each attempt's outcome (documents) reads it from here too.
 */
export function isPermanent(error: unknown): boolean {
  return (
    error instanceof UnrecoverableError ||
    (isClassifiedError(error) && error.retryClass === 'permanent')
  );
}

export function isLastAttempt(job: Pick<Job, 'attemptsMade' | 'opts'>): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

/** Whether BullMQ will run the job again after this attempt failed with `error`. */
export function willRetry(job: Pick<Job, 'attemptsMade' | 'opts'>, error: unknown): boolean {
  return !isPermanent(error) && !isLastAttempt(job);
}
