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
import { JobReleasedError, RunCancelledError } from '../job-signal.js';
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
 * stores the text (`complete`); a resume then goes to the LLM
 * stage while extraction is enabled. A failed attempt that will be
 * retried leaves it `retry_pending` with the time of the next one (the retry table, as the
 * queue's backoff waits it); one that will not is `failed` by its stage's ledger (`failForGood`).
 * Every attempt leaves a metrics row, and its events on the documents' stream (seed 001's
 * callbacks): `document.started`, then `document.completed` or `document.failed`. A cancelled
 * document's job stops where it is, its result refused by the row's new generation.
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
    const prefix = keyPrefixOf(queues);
    // Seed 001's job_started, job_completed and job_failed, on the documents' event stream. The
    // row is the truth: an event that cannot be published is logged, and the job goes on.
    const publish = (event: Parameters<typeof publishDocumentEvent>[2]) =>
      publishDocumentEvent(deps.redis, prefix, event).catch((error: unknown) => {
        log.warn({ err: error, documentId: document.id }, `could not publish ${event.type}`);
      });
    await publish({
      type: 'document.started',
      documentId: document.id,
      tenantId: document.tenantId,
      attempt: document.attempts,
      workerId: worker.workerId,
      startedAt: new Date().toISOString(),
    });
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
      if (completed)
        await publish({
          type: 'document.completed',
          documentId: document.id,
          tenantId: document.tenantId,
          kind: document.kind,
          textChars: extracted.textChars,
          completedAt: new Date().toISOString(),
        });
      return { format: extracted.format, textChars: extracted.textChars, completed };
    } catch (caught) {
      // What stopped the parse when the signal did: the deadline, a release, BullMQ.
      const error: unknown = signal?.aborted ? (signal.reason ?? caught) : caught;
      // Let go to another worker, or cancelled (its row says so already): no attempt ended.
      if (error instanceof JobReleasedError || error instanceof RunCancelledError) {
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
      const message = error instanceof Error ? error.message : String(error);
      let nextRetryAt: Date | null = null;
      if (retrying) {
        nextRetryAt = new Date(Date.now() + documentRetryDelayMs(job.attemptsMade + 1, errorType));
        await scheduleDocumentRetry(db, document.id, document.generation, {
          errorType,
          message,
          nextRetryAt,
        });
      }
      worker.finished(document.id, 'failed');
      await publish({
        type: 'document.failed',
        documentId: document.id,
        tenantId: document.tenantId,
        attempt: document.attempts,
        errorType,
        message: message.slice(0, 2000),
        willRetry: retrying,
        nextRetryAt: nextRetryAt?.toISOString() ?? null,
        failedAt: new Date().toISOString(),
      });
      throw error;
    }
  },
};
