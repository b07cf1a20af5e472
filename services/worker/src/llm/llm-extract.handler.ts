import {
  claimLlmExtraction,
  compareExtractorVersions,
  getLlmExtraction,
  completeLlmExtraction,
  recordLlmAnswer,
  releaseLlmExtraction,
  skipLlmExtraction,
  type LlmExtractionRow,
  type LlmSubject,
} from '@gleaner/db';
import { ClassifiedError } from '@gleaner/errors';
import {
  extractFields,
  isExtractableText,
  LlmOutputError,
  LlmProviderError,
  MIN_EXTRACTION_CHARS,
  type ExtractionResult,
  type FallbackReason,
  type GroundingCount,
  type PostingFields as LlmPostingFields,
} from '@gleaner/llm';
import {
  clearLlmAlert,
  pauseLlmCalls,
  publishExtractionEvent,
  raiseLlmAlert,
  requestLlmExtractions,
} from '@gleaner/queue';
import { DelayedError, UnrecoverableError } from 'bullmq';
import type { HandlerContext, JobHandler, LlmDeps } from '../context.js';
import { LlmProviderBusyError } from './errors.js';
import { mergeLlmPostingFields, missingPostingFields } from './posting-fields.js';
import { limitsWaitMs, llmOf, providerCallHooks } from './provider-calls.js';
import { loadLlmSource, LlmSubjectUnavailable, type LlmSource } from './subject.js';
import {
  groundLabels,
  LABEL_WAIT_MS,
  postingTemplate,
  templateStep,
  type TemplateStep,
} from './template-labels.js';

/**
 * How long every replica's calls wait after the provider refused the key (401, 403): long enough
 * not to send the backlog to a refusal, short enough to resume soon after the key is fixed.
 */
export const UNAUTHORIZED_PAUSE_MS = 60_000;

/**
 * How long a job of a newer prompt version waits before it is delivered again, until a worker of
 * its version takes it. A rolling deploy replaces a replica within a minute; a few seconds keep
 * the bounces between the old replicas cheap without holding the job back long.
 */
export const OTHER_VERSION_DELAY_MS = 5_000;

/** Errors that wait (no attempt spent) while an operator acts, rather than failing the job. */
const OPERATOR_ERRORS = new Set(['LLM_UNAUTHORIZED', 'LLM_MODEL_UNAVAILABLE']);

/**
 * Hands the extraction back to the queue until `at`: the row returns to `queued` (the attempt
 * uncounted) and the job to delayed, spending no attempt. For waits that are not failures: the
 * provider's limits, a 429's retry-after, a tenant's spent daily budget.
 */
async function waitUntil(
  context: HandlerContext,
  subject: LlmSubject,
  version: string,
  at: number,
  reason: string,
): Promise<never> {
  await releaseLlmExtraction(context.db, subject, version);
  await context.job.moveToDelayed(Math.max(at, Date.now() + 10), context.token);
  context.log.info({ until: new Date(at).toISOString(), reason }, 'llm extraction waits');
  throw new DelayedError();
}

/**
 * Calls the model(s) with every call passing the provider gate and charged to the tenant, each
 * answer counted on the row (`model_calls`) so that a retried job goes on from where it stopped.
 */
async function callModel(
  context: HandlerContext,
  llm: LlmDeps,
  source: LlmSource,
  row: LlmExtractionRow,
): Promise<ExtractionResult> {
  const subject: LlmSubject = { subjectType: row.subjectType, subjectId: row.subjectId };
  return extractFields(llm.client, {
    kind: source.subjectType === 'document' ? 'resume' : 'posting',
    text: source.text,
    settings: llm.settings,
    signal: context.signal,
    progress: {
      answeredCalls: row.modelCalls,
      fallbackReason: row.fallbackReason as FallbackReason | null,
    },
    hooks: {
      async beforeFallback(reason) {
        // Seed 002's runbook line, word for word: operators grep for it.
        context.log.info(
          { reason, model: llm.settings.fallbackModel },
          'Falling back to larger model',
        );
        await recordLlmAnswer(context.db, subject, row.version, {
          answered: false,
          fallbackReason: reason,
        });
      },
      ...providerCallHooks(context, llm, row.tenantId, () =>
        recordLlmAnswer(context.db, subject, row.version, { answered: true }),
      ),
    },
  });
}

/**
 * Seed 002's extraction of one document's text or one posting's page: claims the row
 * (`processing`), skips texts under 100 characters, waits out the tenant's daily budget and the
 * provider's limits without failing, asks the primary model and, when its answer is not good
 * enough, the fallback (`@gleaner/llm`), and stores only values found in the text. A posting
 * then leaves `pending`: `ready` with the LLM's fields filling what the rules left empty
 * (provenance `llm`), or `error` when there is still no title. Publishes `extraction.completed`.
 */
export const llmExtractHandler: JobHandler<'llm-extract'> = {
  async run(payload, context) {
    const { db, log } = context;
    const llm = llmOf(context, 'llm-extract');
    const subject: LlmSubject = { subjectType: payload.subjectType, subjectId: payload.subjectId };
    if (payload.version !== llm.version) return otherVersion(payload.version, subject, context);
    const row = await claimLlmExtraction(db, subject, payload.version);
    if (!row) {
      log.debug('extraction not waiting for this job; skipping');
      return { skipped: true };
    }
    let source: LlmSource;
    try {
      source = await loadLlmSource(context, subject, (posting) =>
        postingTemplate(context, posting),
      );
    } catch (error) {
      if (error instanceof LlmSubjectUnavailable) throw new UnrecoverableError(error.message);
      throw error;
    }

    if (!isExtractableText(source.text)) {
      await skipLlmExtraction(
        db,
        subject,
        payload.version,
        `text under ${MIN_EXTRACTION_CHARS} characters`,
      );
      if (source.subjectType === 'posting') await settlePosting(context, source, null);
      return { skipped: true, reason: 'short-text' };
    }

    // The site's template may read what the rules could not, or be taught to (decision 0028).
    let labelling: Extract<TemplateStep, { kind: 'label' }> | undefined;
    if (source.subjectType === 'posting') {
      const step = await templateStep(
        context,
        llm,
        source,
        row,
        missingPostingFields(source.fields),
      );
      if (step.kind === 'read') {
        await skipLlmExtraction(db, subject, payload.version, 'read with the site’s template');
        await settlePosting(context, source, null);
        log.debug({ version: source.template?.version }, 'posting read with its site’s template');
        return { skipped: true, reason: 'site-template' };
      }
      if (step.kind === 'wait')
        await waitUntil(
          context,
          subject,
          payload.version,
          Date.now() + LABEL_WAIT_MS,
          'site template being learned or labelled',
        );
      if (step.kind === 'label') labelling = step;
    }
    try {
      return await extractWithModel(context, llm, payload.version, subject, row, source, labelling);
    } finally {
      await labelling?.release();
    }
  },
};

/**
 * Asks the model (the primary, then the fallback when its answer is not good enough), keeps the
 * grounded answer, settles the posting and publishes `extraction.completed`. For a page that
 * labels its site's template, grounds the answer in the template first.
 */
async function extractWithModel(
  context: HandlerContext,
  llm: LlmDeps,
  version: string,
  subject: LlmSubject,
  row: LlmExtractionRow,
  source: LlmSource,
  labelling: Extract<TemplateStep, { kind: 'label' }> | undefined,
): Promise<Record<string, unknown>> {
  const { db, log } = context;
  if ((await llm.budget.remaining(row.tenantId)) <= 0)
    await waitUntil(
      context,
      subject,
      version,
      llm.budget.nextResetAt(),
      'tenant daily token budget spent',
    );

  const maxCalls = llm.settings.maxCalls ?? Infinity;
  if (row.modelCalls >= maxCalls)
    throw new ClassifiedError(
      `${row.modelCalls} model answers spent (EXTRACTION_MAX_ATTEMPTS ${maxCalls}), none usable`,
      'LLM_INVALID_OUTPUT',
      'permanent',
    );
  let result: ExtractionResult;
  try {
    result = await callModel(context, llm, source, row);
  } catch (error) {
    // No answer left to pay for: another attempt could only fail the same way.
    if (error instanceof LlmOutputError) {
      const spent = (await getLlmExtraction(db, subject))?.modelCalls ?? 0;
      if (spent >= maxCalls)
        throw new ClassifiedError(
          `${error.message}; EXTRACTION_MAX_ATTEMPTS (${maxCalls}) model answers spent`,
          'LLM_INVALID_OUTPUT',
          'permanent',
        );
    }
    const waitMs = limitsWaitMs(error);
    if (waitMs !== undefined)
      await waitUntil(
        context,
        subject,
        version,
        Date.now() + waitMs,
        (error as LlmProviderError | LlmProviderBusyError).code,
      );
    if (error instanceof LlmProviderError && OPERATOR_ERRORS.has(error.code)) {
      // Neither the key nor the models are the job's fault: alert, pause, and wait.
      await alertOperator(context, llm, error);
      await waitUntil(context, subject, version, Date.now() + UNAUTHORIZED_PAUSE_MS, error.code);
    }
    throw error;
  }
  if (result.fallbackUsed) context.counters.llmFallback(result.fallbackReason ?? 'unknown');
  countGrounding(context, result);
  await settleAlerts(context, llm, result);

  const { completed, versionChanged } = await completeLlmExtraction(db, subject, version, {
    model: result.model,
    confidence: result.confidence,
    fields: { ...result.fields },
    dropped: result.dropped,
    fallbackUsed: result.fallbackUsed,
    fallbackReason: result.fallbackReason ?? null,
    promptTokens: result.usage.promptTokens,
    completionTokens: result.usage.completionTokens,
  });
  if (!completed) return { skipped: true };
  // Seed 002's runbook line, word for word (the fallback's is written as it is asked).
  if (!result.fallbackUsed)
    log.info({ model: result.model }, 'Extraction succeeded with primary model');
  if (result.dropped.length > 0)
    log.info({ dropped: result.dropped }, 'values not found in the text were dropped');
  if (labelling && source.subjectType === 'posting')
    await groundLabels(
      context,
      source,
      labelling.template,
      result.fields as Partial<LlmPostingFields>,
    );
  if (source.subjectType === 'posting')
    await settlePosting(context, source, result.fields as Partial<LlmPostingFields>);
  await publishExtractionEvent(llm.redis, llm.prefix, {
    type: 'extraction.completed',
    subjectType: subject.subjectType,
    subjectId: subject.subjectId,
    tenantId: row.tenantId,
    version,
    versionChanged,
    model: result.model,
    confidence: result.confidence,
    extractedAt: new Date().toISOString(),
  }).catch((error: unknown) => {
    // The row is the truth: a consumer that missed the event finds the extraction ready.
    log.warn({ err: error }, 'could not publish extraction.completed');
  });
  log.info(
    { model: result.model, confidence: result.confidence, calls: result.calls },
    'Extraction completed',
  );
  return {
    model: result.model,
    confidence: result.confidence,
    fallbackUsed: result.fallbackUsed,
  };
}

/**
 * A job of another prompt version than this worker's (a rolling deploy runs both): run with this
 * worker's prompt, its answer would be stored as the job's version. As the extractor backfill
 * leaves another version's batch to its own workers, the row is never claimed here:
 *
 * - a newer version's job goes back to delayed, no attempt spent, for a worker of its version
 *   (this replica is on its way out);
 * - an older version's job is this worker's to supersede, as the prompt re-extraction's newer
 *   version wins (decision 0009): its subject is queued again under this version, and the old job
 *   completes. Left waiting, it would bounce for ever once no replica of its version is left.
 */
async function otherVersion(
  version: string,
  subject: LlmSubject,
  context: HandlerContext,
): Promise<{ otherVersion: string; superseded?: boolean }> {
  const { db, log, job, token } = context;
  const mine = llmOf(context, 'llm-extract').version;
  if (compareExtractorVersions(version, mine) < 0 && context.extraction?.version === mine) {
    const row = await getLlmExtraction(db, subject);
    // Only a row still waiting under the job's version; a done or newer one is not this job's.
    if (row?.version === version && (row.status === 'queued' || row.status === 'processing')) {
      await requestLlmExtractions(
        db,
        context.queues,
        [{ ...subject, tenantId: row.tenantId, correlationId: row.correlationId }],
        // The subject may have been this version's before: its finished job's id goes first.
        { ...context.extraction, requeue: ['queued'] },
      );
      log.info({ version, mine }, 'extraction of an older prompt version queued under this one');
      return { otherVersion: version, superseded: true };
    }
    log.debug({ version, mine, status: row?.status }, 'older version job with nothing to do');
    return { otherVersion: version };
  }
  await job.moveToDelayed(Date.now() + OTHER_VERSION_DELAY_MS, token);
  log.info({ version, mine }, 'extraction of another prompt version; left to its workers');
  throw new DelayedError();
}

/** Adds the accepted answer's grounded values, kept and dropped, to the kind's counts. */
function countGrounding(context: HandlerContext, result: ExtractionResult): void {
  let kept = 0;
  let dropped = 0;
  for (const count of Object.values<GroundingCount>(result.counts)) {
    kept += count.kept;
    dropped += count.dropped;
  }
  context.counters.llmGrounding(result.kind, kept, dropped);
}

/**
 * Tells the operator what only they can fix, once per occurrence in the log and as an alert in
 * Redis (`/admin/extraction/status`, `gleaner_llm_provider_alert`). A refused key also pauses
 * every replica's calls for `UNAUTHORIZED_PAUSE_MS`.
 */
async function alertOperator(
  context: HandlerContext,
  llm: LlmDeps,
  error: LlmProviderError,
): Promise<void> {
  if (error.code === 'LLM_UNAUTHORIZED') {
    await raiseLlmAlert(llm.redis, llm.prefix, {
      kind: 'unauthorized',
      model: null,
      message: error.message,
    });
    await pauseLlmCalls(llm.redis, llm.prefix, UNAUTHORIZED_PAUSE_MS);
    context.log.error(
      { err: error, pauseMs: UNAUTHORIZED_PAUSE_MS },
      'the LLM provider refused the API key: calls paused, jobs wait (check GROQ_API_KEY / LLM_API_KEY)',
    );
    return;
  }
  // The primary's refusal is answered by the fallback: a thrown one is the fallback's.
  const models = [llm.settings.fallbackModel];
  for (const name of models)
    await raiseLlmAlert(llm.redis, llm.prefix, {
      kind: 'model_unavailable',
      model: name,
      message: error.message,
    });
  context.log.error(
    { err: error, models },
    'the LLM provider does not serve the configured model: set EXTRACTION_PRIMARY_MODEL / EXTRACTION_FALLBACK_MODEL',
  );
}

/**
 * After an extraction: raises an alert for each model the provider said it does not serve (the
 * fallback answered instead), and clears the alerts a successful call disproves.
 */
async function settleAlerts(
  context: HandlerContext,
  llm: LlmDeps,
  result: ExtractionResult,
): Promise<void> {
  for (const model of result.unavailableModels) {
    await raiseLlmAlert(llm.redis, llm.prefix, {
      kind: 'model_unavailable',
      model,
      message: `${model} is not served by the provider; ${result.model} answered instead`,
    });
    // An operator alert (decision 0017): an error line, as the alert's metric and status say.
    context.log.error(
      { model, answeredBy: result.model },
      'the LLM provider does not serve this model: the fallback answers meanwhile',
    );
  }
  await clearLlmAlert(llm.redis, llm.prefix, 'unauthorized', null);
  if (!result.unavailableModels.includes(result.model))
    await clearLlmAlert(llm.redis, llm.prefix, 'model_unavailable', result.model);
}

/**
 * A posting handed to the LLM leaves `pending`: `ready` with its merged fields when it has a
 * title, otherwise `error`.
 */
async function settlePosting(
  context: HandlerContext,
  source: Extract<LlmSource, { subjectType: 'posting' }>,
  llmFields: Partial<LlmPostingFields> | null,
): Promise<void> {
  const { posting } = source;
  const fields = llmFields ? mergeLlmPostingFields(source.fields, llmFields) : source.fields;
  if (!fields?.title) {
    await context.settlement.settle({
      status: 'error',
      postingId: posting.id,
      runId: posting.runId,
      error: 'llm-extract: no posting found in the page',
    });
    return;
  }
  const missing = missingPostingFields(fields);
  if (missing.length > 0) context.log.info({ missing }, 'posting ready without some fields');
  await context.settlement.settle({
    status: 'ready',
    postingId: posting.id,
    runId: posting.runId,
    contentType: source.contentType,
    sha256: posting.bodySha256,
    textSha256: posting.textSha256,
    fields,
  });
}
