import { recordFetchedBody, sha256Hex, storeBody } from '@gleaner/db';
import { textSha256 } from '@gleaner/extraction';
import { enqueue } from '@gleaner/queue';
import type { JobHandler } from '../context.js';
import { decodeBody } from '../decode-body.js';
import { extractFields } from '../extract-fields.js';
import { LISTING_CONTENT_TYPE } from '../listing-payload.js';
import { fetchPolitely } from '../polite-fetch.js';
import { finalizeAndLog, settleAndFinalize } from './settle.js';

/**
 * Fetches a posting's page (or takes its ATS listing payload), skips it when its visible text
 * did not change, and otherwise extracts it from the bytes in hand and settles it `ready` in
 * one statement with its stored body. What extraction cannot settle here goes to the extract
 * queue with the body stored, so that stage is retried without fetching again.
 */
export const crawlHandler: JobHandler<'crawl'> = {
  async run(payload, context) {
    const { db, queues, log, store } = context;
    const posting = await store.forWork(payload.postingId);
    if (
      !posting ||
      posting.runId !== payload.runId ||
      posting.status !== 'pending' ||
      posting.runStatus !== 'running'
    ) {
      log.debug(
        { status: posting?.status, runStatus: posting?.runStatus },
        'posting not pending in a running run; skipping',
      );
      // A retry after a settle whose run check failed: that check is made again here.
      if (posting?.runId === payload.runId && posting.runStatus === 'running')
        await finalizeAndLog(db, log, payload.runId);
      return { skipped: true };
    }
    // An ATS listing already carried the whole posting: hand it on instead of fetching the page.
    const response =
      posting.listingPayload !== null
        ? {
            body: Buffer.from(JSON.stringify(posting.listingPayload)),
            contentType: LISTING_CONTENT_TYPE,
          }
        : await fetchPolitely(posting.url, posting.site, payload.siteId, context);
    const sha256 = sha256Hex(response.body);
    const html =
      response.contentType === LISTING_CONTENT_TYPE
        ? undefined
        : decodeBody(response.body, response.contentType);
    // Markup-only changes (tokens, build hashes) keep the visible text and need no extraction.
    const pageText = html === undefined ? null : textSha256(html);
    const unchanged =
      posting.extractedAt !== null &&
      (sha256 === posting.bodySha256 || (pageText !== null && pageText === posting.textSha256));
    if (unchanged) {
      await store.settleUnchanged({ postingId: posting.id, runId: payload.runId });
      return { unchanged: true };
    }

    let fields;
    try {
      fields = extractFields({
        siteKind: posting.site.kind,
        url: posting.url,
        body: response.body,
        contentType: response.contentType,
        html,
      });
    } catch (error) {
      log.debug({ err: error }, 'extraction failed; handing the stored body to the extract queue');
    }
    if (fields) {
      const settled = await store.settleExtracted({
        postingId: posting.id,
        runId: payload.runId,
        body: response.body,
        contentType: response.contentType,
        sha256,
        textSha256: pageText,
        fields,
      });
      return settled ? { title: fields.title } : { skipped: true };
    }

    await storeBody(db, response.body, response.contentType, sha256);
    const recorded = await recordFetchedBody(db, posting.id, payload.runId, {
      sha256,
      textSha256: pageText,
    });
    if (!recorded) return { skipped: true };
    await enqueue(queues, 'extract', {
      runId: payload.runId,
      postingId: posting.id,
      correlationId: payload.correlationId,
    });
    return { bytes: response.body.byteLength, extractQueued: true };
  },

  async giveUp(payload, error, context) {
    await settleAndFinalize(context, context.log, payload, {
      status: 'error',
      error: `crawl: ${error.message}`,
    });
  },
};
