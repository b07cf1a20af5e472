import {
  documentErrorTypes,
  failDocument,
  listQuietWaitingDocuments,
  listStaleProcessingDocuments,
  releaseDocument,
  type DocumentErrorType,
  type DocumentWork,
} from '@gleaner/db';
import { enqueueDocuments } from '../documents.js';
import { documentJob } from '../jobs/documents.js';
import { stallLimit, type StageLedger } from './ledger.js';

/**
 * Seed 001's error type of a failed attempt: the parsers' own (`DocumentExtractionError`), and
 * `timeout` for an attempt stopped by the job's deadline; anything else is `unknown`.
 */
export function documentErrorTypeOf(error: unknown): DocumentErrorType {
  const { errorType, code } = (error ?? {}) as { errorType?: unknown; code?: unknown };
  if ((documentErrorTypes as readonly unknown[]).includes(errorType))
    return errorType as DocumentErrorType;
  if (code === 'JOB_TIMEOUT') return 'timeout';
  return 'unknown';
}

/** A document waiting for its job, or claimed by a worker (`processing`). */
type DocumentRow = DocumentWork & { processing: boolean };

/**
 * Extracts the text of one stored document (seed 001). Its row is the document: `pending` or
 * `retry_pending` waits for its job; `processing` is held by the worker that claimed it.
 */
export const documentsLedger: StageLedger<'documents', DocumentRow> = {
  job: documentJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_DOCUMENTS,
    fleetConcurrency: settings.FLEET_CONCURRENCY_DOCUMENTS,
    // The job's deadline is the extraction's (seed 001's extraction_timeout).
    timeoutMs: settings.DOCUMENT_EXTRACTION_TIMEOUT_MS,
    maxStalls: stallLimit(settings),
  }),
  async failForGood({ db }, failures) {
    let failed = 0;
    for (const { payload, reason, error } of failures) {
      const failure = { errorType: documentErrorTypeOf(error), message: reason };
      if (await failDocument(db, payload.documentId, payload.generation, failure)) failed += 1;
    }
    return failed;
  },
  release: async (db, payload, holder) =>
    (await releaseDocument(db, payload.documentId, holder)) !== undefined,
  reconcile: {
    async rows({ db, graceMs, limit, documents }) {
      if (!documents) return [];
      const [waiting, stale] = await Promise.all([
        listQuietWaitingDocuments(db, graceMs, limit),
        listStaleProcessingDocuments(db, documents.staleAfterMs, limit),
      ]);
      return [
        ...waiting.map((row) => ({ ...row, processing: false })),
        ...stale.map((row) => ({ ...row, processing: true })),
      ];
    },
    payload: (row) => ({
      documentId: row.id,
      generation: row.generation,
      correlationId: row.correlationId ?? undefined,
    }),
    claimed: (row) => row.processing,
    // A `retry_pending` one after what is left of its delay, each with its priority.
    async requeue(queues, rows, { documents }) {
      await enqueueDocuments(queues, rows, { maxRetries: documents!.maxRetries });
    },
    counts: {
      requeued: 'documentsRequeued',
      failed: 'documentsFailed',
      released: 'documentsReleased',
    },
  },
};
