import {
  claimDocument,
  completeDocument,
  recordExtractionMetric,
  scheduleDocumentRetry,
  type DocumentErrorType,
} from '@gleaner/db';
import type { DocumentErrorType as ParserErrorType } from '@gleaner/extraction/documents';
import {
  documentErrorTypeOf,
  documentRetryDelayMs,
  publishDocumentEvent,
  requestLlmExtractions,
  keyPrefixOf,
} from '@gleaner/queue';
import type { DocumentDeps, HandlerContext, JobHandler } from '../context.js';
import type { DocumentWorker } from './document-worker.js';
import { JobReleasedError } from '../job-signal.js';
import { willRetry } from '../retry-decision.js';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The parsers' error types are the ones the `documents` table stores: a new one does not compile. */
const _errorTypesMatch: Same<ParserErrorType, DocumentErrorType> = true;

/** A resume whose text is ready goes to the LLM stage (seed 002), once per extraction version. */
async function handResumeToLlm(
  context: HandlerContext,
  document: { id: string; tenantId: string; correlationId: string | null },
): Promise<void> {
  await requestLlmExtractions(
    context.db,
    context.queues,
    [
      {
        subjectType: 'document',
        subjectId: document.id,
        tenantId: document.tenantId,
        correlationId: document.correlationId,
      },
    ],
    context.extraction!,
  );
}

function documentsOf(context: HandlerContext): { deps: DocumentDeps; worker: DocumentWorker } {
  if (!context.documents || !context.documentWorker)
    throw new Error('a worker serving documents needs its document dependencies');
  return { deps: context.documents, worker: context.documentWorker };
}

/**
 * Extracts one document's text (seed 001): claims it (`processing`), parses its stored bytes in
 * a parser process under the job's signal (its timeout is DOCUMENT_EXTRACTION_TIMEOUT_MS), and
 * stores the text (`complete`, then a `document.completed` event); a resume then goes to the LLM
 * stage while extraction is enabled. A failed attempt that will be
 * retried leaves it `retry_pending` with the time of the next one (the retry table, as the
 * queue's backoff waits it); one that will not is `failed` by its stage's ledger (`failForGood`).
 * Every attempt leaves a metrics row.
 */
export const documentsHandler: JobHandler<'documents'> = {
  async run(payload, context) {
    const { db, log, job, signal, queues } = context;
    const { deps, worker } = documentsOf(context);
    const document = await claimDocument(
      db,
      payload.documentId,
      payload.generation,
      worker.workerId,
    );
    if (!document) {
      log.debug({ documentId: payload.documentId }, 'document not waiting for this job; skipping');
      return { skipped: true };
    }
    worker.started(document.id);
    const started = performance.now();
    try {
      const extracted = await deps.parser.extract(
        document.content,
        { mediaType: document.mediaType ?? undefined, filename: document.filename ?? undefined },
        { signal, limits: deps.limits },
      );
      const durationMs = Math.round(performance.now() - started);
      // With the attempt's metrics row, in one statement.
      const completed = await completeDocument(
        db,
        document.id,
        document.generation,
        {
          format: extracted.format,
          text: extracted.text,
          title: extracted.title,
          pageCount: extracted.pageCount,
          textChars: extracted.textChars,
          truncated: extracted.truncated,
          extractionMs: durationMs,
        },
        { workerId: worker.workerId, attempt: document.attempts, bytes: document.byteSize },
      );
      worker.finished(document.id, 'completed');
      if (completed && document.kind === 'resume' && context.extraction)
        await handResumeToLlm(context, document).catch((error: unknown) => {
          // Seed 002's "Redis unavailable at ingest": the resume shows under `none` in the
          // extraction status, and a requeue with only_null_status picks it up.
          log.error(
            { err: error, documentId: document.id },
            'could not queue the resume for the LLM',
          );
        });
      if (completed) {
        const prefix = keyPrefixOf(queues);
        await publishDocumentEvent(deps.redis, prefix, {
          type: 'document.completed',
          documentId: document.id,
          tenantId: document.tenantId,
          kind: document.kind,
          textChars: extracted.textChars,
          completedAt: new Date().toISOString(),
        }).catch((error: unknown) => {
          // The row is the truth: a consumer that missed the event finds the document complete.
          log.warn({ err: error, documentId: document.id }, 'could not publish document.completed');
        });
      }
      return { format: extracted.format, textChars: extracted.textChars, completed };
    } catch (caught) {
      // What stopped the parse when the signal did: the deadline, a release, BullMQ.
      const error: unknown = signal?.aborted ? (signal.reason ?? caught) : caught;
      if (error instanceof JobReleasedError) {
        worker.finished(document.id, 'released');
        throw error;
      }
      const durationMs = Math.round(performance.now() - started);
      const errorType = documentErrorTypeOf(error);
      const retrying = willRetry(job, error);
      await recordExtractionMetric(db, {
        documentId: document.id,
        workerId: worker.workerId,
        attempt: document.attempts,
        bytes: document.byteSize,
        durationMs,
        pages: null,
        outcome: retrying ? 'retry' : 'failed',
        errorType,
      });
      if (retrying) {
        const delayMs = documentRetryDelayMs(job.attemptsMade + 1, errorType);
        await scheduleDocumentRetry(db, document.id, document.generation, {
          errorType,
          message: error instanceof Error ? error.message : String(error),
          nextRetryAt: new Date(Date.now() + delayMs),
        });
      }
      worker.finished(document.id, 'failed');
      throw error;
    }
  },
};
