import {
  failLlmExtraction,
  listQuietLlmExtractions,
  pendingPostingRun,
  releaseLlmExtraction,
  type LlmExtractionStatus,
  type LlmExtractionWork,
} from '@gleaner/db';
import { llmExtractJob, llmRetryDelayMs } from '../jobs/llm-extract.js';
import { enqueueLlmExtractions } from '../llm-extract.js';
import { stallLimit, type StageLedger } from './ledger.js';

type ExtractionRow = LlmExtractionWork & { status: LlmExtractionStatus };

/**
 * One LLM extraction of a subject under one prompt version (seed 002). Its row is the
 * extraction: `queued` waits for its job; `processing` is held by the worker calling the model.
 * A posting handed to the LLM stays pending until its extraction ends.
 */
export const llmExtractLedger: StageLedger<'llm-extract', ExtractionRow> = {
  job: llmExtractJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_LLM_EXTRACT,
    fleetConcurrency: settings.FLEET_CONCURRENCY_LLM_EXTRACT,
    // Up to four calls: each model, and each again with more room after a `length`.
    timeoutMs: 4 * settings.EXTRACTION_REQUEST_TIMEOUT_MS + 60_000,
    maxStalls: stallLimit(settings),
    backoff: (attemptsMade: number) =>
      llmRetryDelayMs(attemptsMade, {
        baseMs: settings.EXTRACTION_RETRY_BASE_SECONDS * 1000,
        maxMs: settings.EXTRACTION_RETRY_MAX_SECONDS * 1000,
      }),
  }),
  async failForGood(context, failures) {
    let failed = 0;
    for (const { payload, reason } of failures) {
      const subject = { subjectType: payload.subjectType, subjectId: payload.subjectId };
      if (!(await failLlmExtraction(context.db, subject, payload.version, reason))) continue;
      failed += 1;
      if (payload.subjectType !== 'posting') continue;
      // The posting waited for this extraction: it settles now, so that its run can end.
      const runId = await pendingPostingRun(context.db, payload.subjectId);
      if (runId)
        await context.settlePostings([
          { status: 'error', postingId: payload.subjectId, runId, error: `llm-extract: ${reason}` },
        ]);
    }
    return failed;
  },
  release: (db, payload) =>
    releaseLlmExtraction(
      db,
      { subjectType: payload.subjectType, subjectId: payload.subjectId },
      payload.version,
    ),
  reconcile: {
    rows: async ({ db, graceMs, limit, llm }) =>
      llm
        ? listQuietLlmExtractions(db, { quietMs: graceMs, staleMs: llm.staleAfterMs, limit })
        : [],
    payload: (row) => ({
      subjectType: row.subjectType,
      subjectId: row.subjectId,
      version: row.version,
      correlationId: row.correlationId ?? undefined,
    }),
    claimed: (row) => row.status === 'processing',
    async requeue(queues, rows, { llm }) {
      await enqueueLlmExtractions(queues, rows, llm!);
    },
    counts: { requeued: 'llmRequeued', failed: 'llmFailed' },
  },
};
