import { recordFetchedBody, storeBody } from '@gleaner/db';
import { enqueue } from '@gleaner/queue';
import type { JobHandler } from '../context.js';
import { handPostingToLlm, needsLlm } from '../llm/handoff.js';
import { LISTING_CONTENT_TYPE } from '../page-analysis/page-fields.js';
import { countSiteRequests } from '../site-requests.js';
import { noteTemplateFit, siteTemplateOf } from '../templates/site-templates.js';
import { fetchPolitely } from './polite-fetch.js';

/**
 * Fetches a posting's page (or takes its ATS listing payload), skips it when its visible text
 * did not change, and otherwise extracts it from the bytes in hand (the page analyser, in a
 * thread) and settles it `ready` in one statement with its stored body. What extraction cannot
 * settle here goes to the extract queue with the body stored, so that stage is retried without
 * fetching again; what it read without a required field goes to the LLM stage when the site asks
 * for it. A page whose analyser thread died fails the job (transient): it is retried.
 * The job's signal (its timeout, its run's cancellation) stops its gate waits, its fetch and
 * its page's analysis.
 */
export const crawlHandler: JobHandler<'crawl'> = {
  async run(payload, context) {
    const { db, queues, log, settlement, analyser, signal } = context;
    const posting = await settlement.pendingWork(payload);
    if (!posting) {
      log.debug('posting not pending in a running run; skipping');
      return { skipped: true };
    }
    // An ATS listing already carried the whole posting: hand it on instead of fetching the page.
    const response =
      posting.listingPayload !== null
        ? {
            body: Buffer.from(JSON.stringify(posting.listingPayload)),
            contentType: LISTING_CONTENT_TYPE,
          }
        : await fetchPolitely(posting.url, posting.site, payload.siteId, {
            ...context,
            fetcher: countSiteRequests(context.fetcher, context.counters, payload),
          });
    log.debug(
      { url: posting.url, bytes: response.body.byteLength },
      posting.listingPayload !== null ? 'posting taken from the listing' : 'page fetched',
    );
    // A page is read with its site's template (decision 0028); one read from its markup before
    // the template was learned (or learned again) is read again even when its text did not change.
    const template =
      posting.listingPayload === null ? await siteTemplateOf(db, payload.siteId) : null;
    const readAfresh =
      posting.extractedAt === null ||
      (template !== null &&
        posting.extractedAt < template.createdAt &&
        !posting.readFromStructuredData);
    const analysis = await analyser.analyse(
      {
        body: response.body,
        contentType: response.contentType,
        siteKind: posting.site.kind,
        url: posting.url,
        previous: readAfresh
          ? null
          : { bodySha256: posting.bodySha256, textSha256: posting.textSha256 },
        ...(template && { template: template.template }),
      },
      signal,
    );
    const { sha256, textSha256: pageText } = analysis;
    await noteTemplateFit(context, payload.siteId, template, analysis.templateFit, {
      sha256,
      fetchedAt: null,
    });
    if (analysis.unchanged) {
      await settlement.settle({ status: 'skipped', postingId: posting.id, runId: payload.runId });
      log.debug({ url: posting.url }, 'unchanged since it was last extracted; skipped');
      return { unchanged: true };
    }
    if (analysis.fields && !needsLlm(context, posting.site, analysis.fields)) {
      const settled = await settlement.settle({
        status: 'ready',
        postingId: posting.id,
        runId: payload.runId,
        body: response.body,
        contentType: response.contentType,
        sha256,
        textSha256: pageText,
        fields: analysis.fields,
      });
      // Extracted here, from the bytes in hand: the run log badges it as the extract stage's.
      if (settled) log.debug({ stage: 'EXT', title: analysis.fields.title }, 'posting extracted');
      return settled ? { title: analysis.fields.title } : { skipped: true };
    }

    await storeBody(db, response.body, response.contentType, sha256);
    const recorded = await recordFetchedBody(db, posting.id, payload.runId, {
      sha256,
      textSha256: pageText,
    });
    if (!recorded) return { skipped: true };
    if (analysis.fields) {
      // Read, but without a required field: the LLM stage fills in what it can find.
      await handPostingToLlm(
        context,
        { id: posting.id, siteId: payload.siteId },
        payload.correlationId,
      );
      return { bytes: response.body.byteLength, llmQueued: true };
    }
    log.debug(
      { reason: analysis.extractionError },
      'extraction failed; handing the stored body to the extract queue',
    );
    await enqueue(queues, 'extract', {
      runId: payload.runId,
      postingId: posting.id,
      correlationId: payload.correlationId,
    });
    return { bytes: response.body.byteLength, extractQueued: true };
  },
};
