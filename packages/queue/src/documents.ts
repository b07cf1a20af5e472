import type { DocumentWork } from '@gleaner/db';
import type { RedisClient } from './connection.js';
import { appendEvent, readEvents, type ReadEventsOptions } from './event-stream.js';
import { bullmqDocumentPriority } from './jobs/documents.js';
import { enqueueBulk, type Queues } from './queues.js';

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

export interface DocumentCompletedEvent {
  type: 'document.completed';
  documentId: string;
  tenantId: string;
  kind: string;
  textChars: number;
  completedAt: string;
}

/** Appends an event; returns its stream id. */
export async function publishDocumentEvent(
  redis: RedisClient,
  prefix: string,
  event: DocumentCompletedEvent,
): Promise<string> {
  return appendEvent(redis, documentEventsKey(prefix), DOCUMENT_EVENTS_MAX_LENGTH, event);
}

/** Document events after `options.after`, oldest first (`readEvents`). */
export async function readDocumentEvents(
  redis: RedisClient,
  prefix: string,
  options: ReadEventsOptions,
): Promise<{ id: string; event: DocumentCompletedEvent }[]> {
  return readEvents<DocumentCompletedEvent>(redis, documentEventsKey(prefix), options);
}
