import {
  cancelDocument,
  type CancelledDocument,
  type Database,
  type DocumentWork,
} from '@gleaner/db';
import { jobs } from './catalogue.js';
import type { RedisClient } from './connection.js';
import { appendEvent, readEvents, type ReadEventsOptions } from './event-stream.js';
import { bullmqDocumentPriority } from './jobs/documents.js';
import { enqueueBulk, keyPrefixOf, type Queues } from './queues.js';
import { runCancellationChannel } from './run-cancellation.js';

/**
 * Queues the extraction jobs of documents: one job per document and generation (the dedupe), with
 * DOCUMENT_MAX_RETRIES + 1 attempts, seed 001's priority mapped onto BullMQ's, and for a
 * `retry_pending` document the delay left until its next attempt. Used by the API (uploads,
 * batches, retry), the reconciler and the tests alike. Returns how many jobs it added.
 */
export async function enqueueDocuments(
  queues: Queues,
  work: readonly DocumentWork[],
  options: {
    maxRetries: number;
    now?: number;
    /** A delay of each job's own (a dead-letter replay spreading its jobs out). */
    delayMs?: (item: DocumentWork) => number;
  },
): Promise<number> {
  const now = options.now ?? Date.now();
  const byId = new Map(work.map((item) => [item.id, item]));
  return enqueueBulk(
    queues,
    'documents',
    work.map((item) => ({
      documentId: item.id,
      generation: item.generation,
      correlationId: item.correlationId ?? undefined,
    })),
    (payload) => {
      const item = byId.get(payload.documentId)!;
      const delay = Math.max(
        item.nextRetryAt ? item.nextRetryAt.getTime() - now : 0,
        options.delayMs?.(item) ?? 0,
      );
      return {
        attempts: options.maxRetries + 1,
        priority: bullmqDocumentPriority(item.priority),
        ...(delay > 0 ? { delay } : {}),
      };
    },
  );
}

/**
 * Document events for the stages after extraction (the LLM stage subscribes to `completed`): a
 * Redis stream under the queue prefix, so a consumer that was down reads what it missed from the
 * last id it handled (or joins with a consumer group, `XREADGROUP`). Capped at about
 * `DOCUMENT_EVENTS_MAX_LENGTH` entries: a consumer further behind than that finds the rest in
 * Postgres (`status = 'complete'`, `completed_at`), which stays the truth.
 */
export const DOCUMENT_EVENTS_MAX_LENGTH = 100_000;

/**
 * Not `<prefix>:documents:…`: BullMQ keeps the documents queue's own keys there, its event stream
 * at `<prefix>:documents:events` among them.
 */
export function documentEventsKey(prefix: string): string {
  return `${prefix}:document-events`;
}

/** Seed 001's `job_started`: a worker claimed the document and began an attempt. */
export interface DocumentStartedEvent {
  type: 'document.started';
  documentId: string;
  tenantId: string;
  attempt: number;
  workerId: string;
  startedAt: string;
}

/** Seed 001's `job_completed`: its text is stored. */
export interface DocumentCompletedEvent {
  type: 'document.completed';
  documentId: string;
  tenantId: string;
  kind: string;
  textChars: number;
  completedAt: string;
}

/** Seed 001's `job_failed`: an attempt failed; `willRetry` says whether another comes. */
export interface DocumentFailedEvent {
  type: 'document.failed';
  documentId: string;
  tenantId: string;
  attempt: number;
  errorType: string;
  message: string;
  willRetry: boolean;
  /** When the next attempt runs, while one will. */
  nextRetryAt: string | null;
  failedAt: string;
}

/** Its extraction was cancelled (`POST /documents/:id/cancel`), queued or running. */
export interface DocumentCancelledEvent {
  type: 'document.cancelled';
  documentId: string;
  tenantId: string;
  /** What it was doing: `pending`, `retry_pending` or `processing`. */
  previousStatus: string;
  cancelledAt: string;
}

export type DocumentEvent =
  DocumentStartedEvent | DocumentCompletedEvent | DocumentFailedEvent | DocumentCancelledEvent;

/** Appends an event; returns its stream id. */
export async function publishDocumentEvent(
  redis: RedisClient,
  prefix: string,
  event: DocumentEvent,
): Promise<string> {
  return appendEvent(redis, documentEventsKey(prefix), DOCUMENT_EVENTS_MAX_LENGTH, event);
}

/** Document events after `options.after`, oldest first (`readEvents`). */
export async function readDocumentEvents(
  redis: RedisClient,
  prefix: string,
  options: ReadEventsOptions,
): Promise<{ id: string; event: DocumentEvent }[]> {
  return readEvents<DocumentEvent>(redis, documentEventsKey(prefix), options);
}

const DOCUMENT_CANCELLATION = 'document:';

/** What in-flight jobs are aborted by for a document: its id on the runs' cancel channel. */
export function documentCancellationId(documentId: string): string {
  return `${DOCUMENT_CANCELLATION}${documentId}`;
}

/** The document a cancellation id names; undefined for a run's id. */
export function documentOfCancellation(id: string): string | undefined {
  return id.startsWith(DOCUMENT_CANCELLATION) ? id.slice(DOCUMENT_CANCELLATION.length) : undefined;
}

/**
 * Cancels a document's extraction (seed 001's `cancel`): the row first (`cancelDocument`, whose
 * new generation refuses the old job's results), then its queued job is removed, a running one
 * is aborted on whichever worker runs it (the runs' cancel broadcast), and a
 * `document.cancelled` event is published. Undefined when the document was not waiting or
 * running. A broadcast or event that fails is logged by the caller: the row already holds.
 */
export async function cancelDocumentExtraction(
  deps: { db: Database; queues: Queues; redis: RedisClient },
  documentId: string,
): Promise<(CancelledDocument & { problems: Error[] }) | undefined> {
  const cancelled = await cancelDocument(deps.db, documentId);
  if (!cancelled) return undefined;
  const problems: Error[] = [];
  const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));
  const prefix = keyPrefixOf(deps.queues);
  const jobId = jobs.documents.jobId({ documentId, generation: cancelled.generation });
  try {
    const job = await deps.queues.documents.getJob(jobId);
    // A job a worker holds cannot be removed: the broadcast aborts it, and its generation is
    // refused if it gets as far as storing.
    if (job && !(await job.isActive())) await job.remove();
  } catch (error) {
    problems.push(asError(error));
  }
  if (cancelled.previousStatus === 'processing')
    await deps.redis
      .publish(runCancellationChannel(prefix), documentCancellationId(documentId))
      .catch((error: unknown) => problems.push(asError(error)));
  await publishDocumentEvent(deps.redis, prefix, {
    type: 'document.cancelled',
    documentId,
    tenantId: cancelled.tenantId,
    previousStatus: cancelled.previousStatus,
    cancelledAt: new Date().toISOString(),
  }).catch((error: unknown) => problems.push(asError(error)));
  return { ...cancelled, problems };
}
