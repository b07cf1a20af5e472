import {
  applyBackfillBatch,
  getExtractionBackfill,
  loadBody,
  postingFieldKeys,
  readBackfillBatch,
  type ExtractedFields,
  type PostingRow,
} from '@gleaner/db';
import { isClassifiedError } from '@gleaner/errors';
import { EXTRACTOR_VERSION } from '@gleaner/extraction';
import { enqueue } from '@gleaner/queue';
import type { BackfillSettings, HandlerContext, JobHandler } from '../context.js';
import type { PageAnalysis } from '../page-analysis/analyse-page.js';
import { LISTING_CONTENT_TYPE } from '../page-analysis/page-fields.js';
import { siteTemplateOf } from '../templates/site-templates.js';

/** Settings of a worker built without them (`BACKFILL_*`'s defaults). */
export const defaultBackfillSettings: BackfillSettings = {
  version: EXTRACTOR_VERSION,
  batchSize: 100,
  ratePerSecond: 50,
};

/**
 * Re-extracts one batch of stored postings under this worker's extractor version (decision
 * 0013): an ATS posting from its listing payload, a page from its stored body, through the same
 * analyser the crawl uses, never fetching. A posting whose body is gone is skipped and counted;
 * one the extractor cannot read is counted failed; both are left as they are. The batch is saved
 * with the backfill's cursor and counters in one transaction, then the next batch is queued,
 * delayed so that the backfill keeps to `BACKFILL_RATE_PER_SECOND`.
 */
export const backfillHandler: JobHandler<'backfill'> = {
  async run(payload, context) {
    const { db, queues, log, analyser, signal } = context;
    const settings = context.backfill ?? defaultBackfillSettings;
    if (payload.version !== settings.version) {
      // A replica of another release (a rolling deploy): the backfill is its version's workers'.
      log.info(
        { version: payload.version, mine: settings.version },
        'backfill of another extractor version; left to the workers that run it',
      );
      return { otherVersion: true };
    }
    const backfill = await getExtractionBackfill(db, payload.version);
    if (!backfill || backfill.status !== 'running' || backfill.cursor !== payload.cursor) {
      log.debug({ status: backfill?.status }, 'backfill batch already done or superseded');
      return { stale: true };
    }
    const startedAt = performance.now();
    const batch = await readBackfillBatch(db, payload.version, payload.cursor, settings.batchSize);
    const reextracted: { postingId: string; fields: ExtractedFields }[] = [];
    let skipped = 0;
    let failed = 0;
    let lastError: string | null = null;
    for (const { posting, siteKind } of batch) {
      signal?.throwIfAborted();
      const stored = await storedSource(context, posting);
      if (!stored) {
        skipped += 1;
        continue;
      }
      // A page is read with its site's template, as the crawl reads it (decision 0028).
      const template =
        posting.listingPayload === null ? await siteTemplateOf(db, posting.siteId) : null;
      let analysis: PageAnalysis;
      try {
        analysis = await analyser.analyse(
          {
            ...stored,
            siteKind,
            url: posting.url,
            previous: null,
            ...(template && { template: template.template }),
          },
          signal,
        );
      } catch (error) {
        // A page past its time budget would be as slow in the next batch: counted, left as it is.
        if (!(isClassifiedError(error) && error.code === 'EXTRACT_PAGE_TOO_SLOW')) throw error;
        failed += 1;
        lastError = `posting ${posting.id}: ${error.message}`;
        continue;
      }
      if (!analysis.fields) {
        failed += 1;
        lastError = `posting ${posting.id}: ${analysis.extractionError ?? 'no fields'}`;
        continue;
      }
      reextracted.push({ postingId: posting.id, fields: keepLlmFields(posting, analysis.fields) });
    }
    const finished = batch.length < settings.batchSize;
    const nextCursor = batch.at(-1)?.posting.id ?? null;
    const { applied, saved } = await applyBackfillBatch(db, {
      version: payload.version,
      cursor: payload.cursor,
      nextCursor,
      reextracted,
      skipped,
      failed,
      finished,
      lastError,
    });
    if (!applied) {
      log.debug('backfill batch saved by another delivery');
      return { stale: true };
    }
    log.info(
      { version: payload.version, saved, skipped, failed, finished },
      finished ? 'extractor backfill completed' : 'extractor backfill batch saved',
    );
    if (!finished) {
      const elapsedMs = performance.now() - startedAt;
      const delay = Math.max(
        0,
        Math.round((batch.length / settings.ratePerSecond) * 1000 - elapsedMs),
      );
      await enqueue(
        queues,
        'backfill',
        { version: payload.version, cursor: nextCursor },
        { delay },
      );
    }
    return { saved, skipped, failed, finished };
  },
};

/** What a posting was extracted from: its listing payload (ATS) or its stored page body. */
async function storedSource(
  { db }: HandlerContext,
  posting: PostingRow,
): Promise<{ body: Buffer; contentType: string | null } | undefined> {
  // As the crawl hands a listing on: the payload's JSON, mapped by the site's adapter.
  if (posting.listingPayload !== null)
    return {
      body: Buffer.from(JSON.stringify(posting.listingPayload)),
      contentType: LISTING_CONTENT_TYPE,
    };
  if (!posting.bodySha256) return undefined;
  return loadBody(db, posting.bodySha256);
}

/**
 * The new fields, with what the LLM stage had filled in kept where the rules still find nothing:
 * a backfill re-runs the deterministic rules only, and must not drop what the LLM found.
 */
function keepLlmFields(previous: PostingRow, fields: ExtractedFields): ExtractedFields {
  const merged: Record<string, unknown> = { ...fields };
  const provenance = { ...(fields.provenance ?? {}) };
  for (const key of postingFieldKeys) {
    if (previous.provenance?.[key] !== 'llm') continue;
    const current = merged[key];
    if (current !== null && current !== undefined && current !== '') continue;
    merged[key] = previous[key];
    provenance[key] = 'llm';
  }
  return { ...(merged as ExtractedFields), provenance };
}
