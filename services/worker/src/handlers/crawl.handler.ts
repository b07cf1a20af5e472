import { getPostingForWork, recordFetchedBody, sha256Hex, storeBody } from '@gleaner/db';
import { pageFingerprints } from '@gleaner/extraction';
import { enqueue } from '@gleaner/queue';
import type { HandlerContext, JobHandler } from '../context.js';
import { decodeBody } from '../decode-body.js';
import { LISTING_CONTENT_TYPE } from '../listing-payload.js';
import { fetchPolitely } from '../polite-fetch.js';
import { settleAndFinalize } from './settle.js';

export const crawlHandler: JobHandler<'crawl'> = {
  async run(payload, context) {
    const { db, queues, log } = context;
    const found = await getPostingForWork(db, payload.postingId);
    if (
      !found ||
      found.posting.runId !== payload.runId ||
      found.posting.status !== 'pending' ||
      found.runStatus !== 'running'
    ) {
      log.debug(
        { status: found?.posting.status, runStatus: found?.runStatus },
        'posting not pending in a running run; skipping',
      );
      return { skipped: true };
    }
    const { posting, site } = found;
    // An ATS listing already carried the whole posting: hand it on instead of fetching the page.
    const response =
      posting.listingPayload !== null
        ? {
            body: Buffer.from(JSON.stringify(posting.listingPayload)),
            contentType: LISTING_CONTENT_TYPE,
          }
        : await fetchPolitely(posting.url, site, payload.siteId, context);
    const sha256 = sha256Hex(response.body);
    const isPage = response.contentType !== LISTING_CONTENT_TYPE;
    // Markup-only changes (tokens, build hashes) keep the visible text and need no extraction.
    const fingerprints = isPage
      ? pageFingerprints(decodeBody(response.body, response.contentType))
      : undefined;
    const unchanged =
      posting.extractedAt !== null &&
      (sha256 === posting.bodySha256 ||
        (fingerprints !== undefined && fingerprints.textSha256 === posting.textSha256));
    if (unchanged) {
      await settleAndFinalize(context, log, payload, { status: 'skipped' });
      return { unchanged: true };
    }
    await storeBody(db, response.body, response.contentType, sha256);
    const recorded = await recordFetchedBody(db, posting.id, payload.runId, {
      sha256,
      simhash: fingerprints?.simhash ?? null,
      textSha256: fingerprints?.textSha256 ?? null,
    });
    if (!recorded) return { skipped: true };
    await enqueue(queues, 'extract', {
      runId: payload.runId,
      postingId: posting.id,
      correlationId: payload.correlationId,
    });
    return { bytes: response.body.byteLength };
  },

  async giveUp(payload, error, context) {
    await settleAndFinalize(context, context.log, payload, {
      status: 'error',
      error: `crawl: ${error.message}`,
    });
  },
};
