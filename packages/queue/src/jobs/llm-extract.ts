import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/** The name of the backoff every llm-extract job carries (`llmRetryDelayMs` computes it). */
export const LLM_BACKOFF_TYPE = 'llm-retry';

/**
 * Seed 002's retry delay: retry n waits base × 2^(n−1), at most `maxMs`
 * (EXTRACTION_RETRY_BASE_SECONDS, EXTRACTION_RETRY_MAX_SECONDS).
 */
export function llmRetryDelayMs(
  attemptsMade: number,
  { baseMs, maxMs }: { baseMs: number; maxMs: number },
): number {
  const exponent = Math.min(Math.max(attemptsMade, 1) - 1, 30);
  return Math.min(baseMs * 2 ** exponent, maxMs);
}

/**
 * One LLM extraction of a document's text or a posting's page under one prompt version (seed
 * 002). The id is the subject and version: one pending extraction per subject and version, however
 * often it is asked for; a bumped version is a new job.
 */
export const llmExtractJob = defineJob({
  queue: 'llm-extract',
  name: 'llm.extract-fields',
  payload: z.object({
    subjectType: z.enum(['document', 'posting']),
    subjectId: z.uuid(),
    version: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
    correlationId: z.string().max(128).optional(),
  }),
  // Attempts and the backoff's base come from EXTRACTION_MAX_ATTEMPTS and
  // EXTRACTION_RETRY_BASE_SECONDS at each add (`enqueueLlmExtractions`).
  defaults: { attempts: 2, backoff: { type: LLM_BACKOFF_TYPE, delay: 10_000 }, ...retention },
  jobId: (p) => `llm-${p.subjectType}-${p.subjectId}-${p.version}`,
  // The base is the job's own backoff delay; a worker replaces this with its configured cap.
  backoffStrategy: (attemptsMade, _type, _error, job) =>
    llmRetryDelayMs(attemptsMade, {
      baseMs: backoffDelayOf(job?.opts.backoff) ?? 10_000,
      maxMs: 60_000,
    }),
});

function backoffDelayOf(backoff: unknown): number | undefined {
  const delay = (backoff as { delay?: unknown } | undefined)?.delay;
  return typeof delay === 'number' ? delay : undefined;
}
