import {
  queueLlmExtractions,
  type Database,
  type LlmExtractionRequest,
  type LlmExtractionStatus,
  type LlmExtractionWork,
} from '@gleaner/db';
import type { RedisClient } from './connection.js';
import { appendEvent, readEvents, type ReadEventsOptions } from './event-stream.js';
import { removeFinishedJob } from './job-states.js';
import { LLM_BACKOFF_TYPE, llmExtractJob } from './jobs/llm-extract.js';
import { enqueueBulk, type Queues } from './queues.js';

/**
 * Queues LLM extractions: one job per subject and version (the dedupe), with
 * EXTRACTION_MAX_ATTEMPTS attempts and EXTRACTION_RETRY_BASE_SECONDS as the backoff's base. Used
 * by the document worker (a resume's text is ready), the crawl path (a page it could not read),
 * the admin requeue and the reconciler. Returns how many jobs it asked for.
 */
export async function enqueueLlmExtractions(
  queues: Queues,
  work: readonly LlmExtractionWork[],
  options: { maxAttempts: number; retryBaseMs: number; delayMs?: number },
): Promise<number> {
  return enqueueBulk(
    queues,
    'llm-extract',
    work.map((item) => ({
      subjectType: item.subjectType,
      subjectId: item.subjectId,
      version: item.version,
      correlationId: item.correlationId ?? undefined,
    })),
    () => ({
      attempts: options.maxAttempts,
      backoff: { type: LLM_BACKOFF_TYPE, delay: options.retryBaseMs },
      ...(options.delayMs ? { delay: options.delayMs } : {}),
    }),
  );
}

/** How extractions are queued: EXTRACTION_VERSION, EXTRACTION_MAX_ATTEMPTS, the retry base. */
export interface LlmQueueSettings {
  version: string;
  maxAttempts: number;
  retryBaseMs: number;
}

/**
 * Asks for the LLM extraction of subjects under the current version: their rows become `queued`
 * (see `queueLlmExtractions`: done ones are left alone unless `requeue` names their status), then
 * their jobs are added. Returns the subjects now waiting. A job lost between the two is re-added
 * by the reconciler.
 */
export async function requestLlmExtractions(
  db: Database,
  queues: Queues,
  requests: readonly Omit<LlmExtractionRequest, 'version'>[],
  settings: LlmQueueSettings & {
    requeue?: readonly LlmExtractionStatus[];
    /** Added delayed by this much (a dead-letter replay spreading its jobs out). */
    delayMs?: number;
  },
): Promise<LlmExtractionWork[]> {
  const work = await queueLlmExtractions(
    db,
    requests.map((request) => ({ ...request, version: settings.version })),
    { requeue: settings.requeue },
  );
  if (work.length === 0) return work;
  // A requeue under the same version reuses the job id: the finished job holding it goes first
  // (BullMQ keeps completed and failed jobs a while and ignores an add whose id it holds).
  if (settings.requeue?.length)
    await Promise.all(
      work.map((item) =>
        removeFinishedJob(
          queues,
          'llm-extract',
          llmExtractJob.jobId({ ...item, correlationId: undefined }),
        ),
      ),
    );
  await enqueueLlmExtractions(queues, work, settings);
  return work;
}

/** Capped like the document events: a consumer further behind reads Postgres instead. */
export const EXTRACTION_EVENTS_MAX_LENGTH = 100_000;

/** Not under `<prefix>:llm-extract:…`, where BullMQ keeps the queue's own keys. */
export function extractionEventsKey(prefix: string): string {
  return `${prefix}:extraction-events`;
}

/**
 * A tenant's LLM tokens spent on one UTC day (the worker's tenant budget adds to it, the metrics
 * read it): `<prefix>:llm:tokens:<tenant>:<YYYY-MM-DD>`.
 */
export function tenantTokensKey(prefix: string, tenant: string, now = Date.now()): string {
  return `${prefix}:llm:tokens:${tenant}:${new Date(now).toISOString().slice(0, 10)}`;
}

/**
 * Published when a subject's extraction ends `ready` (seed 002's re-embed trigger): a search index
 * or embedding service re-reads the subject. `versionChanged` tells a consumer that the subject's
 * fields come from another prompt version than before.
 */
export interface ExtractionCompletedEvent {
  type: 'extraction.completed';
  subjectType: 'document' | 'posting';
  subjectId: string;
  tenantId: string;
  version: string;
  versionChanged: boolean;
  model: string;
  confidence: number;
  extractedAt: string;
}

export async function publishExtractionEvent(
  redis: RedisClient,
  prefix: string,
  event: ExtractionCompletedEvent,
): Promise<string> {
  return appendEvent(redis, extractionEventsKey(prefix), EXTRACTION_EVENTS_MAX_LENGTH, event);
}

/** Extraction events after `options.after`, oldest first (`readEvents`). */
export async function readExtractionEvents(
  redis: RedisClient,
  prefix: string,
  options: ReadEventsOptions,
): Promise<{ id: string; event: ExtractionCompletedEvent }[]> {
  return readEvents<ExtractionCompletedEvent>(redis, extractionEventsKey(prefix), options);
}
