import { getPostingForWork, recordFetchedBody, sha256Hex, storeBody } from '@gleaner/db';
import { enqueue } from '@gleaner/queue';
import type { JobHandler } from '../context.js';
import { LISTING_CONTENT_TYPE } from '../listing-payload.js';
import { settleAndFinalize } from './settle.js';

export const crawlHandler: JobHandler<'crawl'> = {
  async run(payload, deps) {
    const { db, queues, fetcher, log } = deps;
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
    const { posting } = found;
    // An ATS listing already carried the whole posting: hand it on instead of fetching the page.
    const response =
      posting.listingPayload !== null
        ? {
            body: Buffer.from(JSON.stringify(posting.listingPayload)),
            contentType: LISTING_CONTENT_TYPE,
          }
        : await fetcher.fetch({ url: posting.url });
    const sha256 = sha256Hex(response.body);
    if (sha256 === posting.bodySha256 && posting.extractedAt !== null) {
      await settleAndFinalize(deps, log, payload, { status: 'skipped' });
      return { unchanged: true };
    }
    await storeBody(db, response.body, response.contentType, sha256);
    if (!(await recordFetchedBody(db, posting.id, payload.runId, { sha256, simhash: null })))
      return { skipped: true };
    await enqueue(queues, 'extract', {
      runId: payload.runId,
      postingId: posting.id,
      correlationId: payload.correlationId,
    });
    return { bytes: response.body.byteLength };
  },

  async giveUp(payload, error, deps) {
    await settleAndFinalize(deps, deps.log, payload, {
      status: 'error',
      error: `crawl: ${error.message}`,
    });
  },
};
