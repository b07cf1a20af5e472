import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/**
 * Seed 001's retry table: the delay before the retry that follows failed attempt 1, 2, 3, 4, and
 * 5 or later. A retry after `extractor_missing` waits at least 30 s (a parser being installed is
 * not back in half a second).
 */
export const DOCUMENT_RETRY_DELAYS_MS = [500, 2_000, 10_000, 30_000, 60_000] as const;
export const EXTRACTOR_MISSING_MIN_DELAY_MS = 30_000;

/** The name of the custom backoff every documents job carries (`documentBackoff` computes it). */
export const DOCUMENT_BACKOFF_TYPE = 'document-retry-table';

/** How long to wait before retrying after failed attempt `attemptsMade` (1-based) of this error type. */
export function documentRetryDelayMs(attemptsMade: number, errorType?: string): number {
  const index = Math.min(Math.max(attemptsMade, 1), DOCUMENT_RETRY_DELAYS_MS.length) - 1;
  const delay = DOCUMENT_RETRY_DELAYS_MS[index]!;
  return errorType === 'extractor_missing'
    ? Math.max(delay, EXTRACTOR_MISSING_MIN_DELAY_MS)
    : delay;
}

/**
 * BullMQ's custom backoff (a Worker's `settings.backoffStrategy`), called with the attempts made
 * so far and the error the attempt threw: the document parsers' errors carry their `errorType`.
 */
export function documentBackoff(attemptsMade: number, _type?: string, error?: Error): number {
  const errorType = (error as { errorType?: unknown } | undefined)?.errorType;
  return documentRetryDelayMs(attemptsMade, typeof errorType === 'string' ? errorType : undefined);
}

/** Seed 001's priorities the API accepts: higher runs first. */
export const DOCUMENT_PRIORITY_MIN = -1000;
export const DOCUMENT_PRIORITY_MAX = 1000;

/**
 * Seed 001's priority (higher first) as BullMQ's (lower first, 1 to 2^21): 1001 − priority, so
 * 1000 → 1 and −1000 → 2001. Never 0: a job without a priority would jump every prioritized one,
 * and jobs of one priority run in the order they were added (BullMQ keeps them FIFO).
 */
export function bullmqDocumentPriority(priority: number): number {
  const clamped = Math.min(
    Math.max(Math.trunc(priority), DOCUMENT_PRIORITY_MIN),
    DOCUMENT_PRIORITY_MAX,
  );
  return DOCUMENT_PRIORITY_MAX + 1 - clamped;
}

/**
 * Extracts the text of one stored document. `generation` is the document's job generation: a
 * retry of a failed document starts the next one, so its job gets a new id (BullMQ ignores an add
 * whose id it still holds, and keeps failed jobs a week).
 */
export const documentJob = defineJob({
  queue: 'documents',
  name: 'documents.extract-text',
  payload: z.object({
    documentId: z.uuid(),
    generation: z.int().min(0),
    correlationId: z.string().max(128).optional(),
  }),
  // Attempts come from DOCUMENT_MAX_RETRIES at each add (`enqueueDocuments`); the priority too.
  defaults: { attempts: 4, backoff: { type: DOCUMENT_BACKOFF_TYPE }, ...retention },
  jobId: (p) => `document-${p.documentId}-${p.generation}`,
  backoffStrategy: documentBackoff,
});
