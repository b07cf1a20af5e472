import { getPostingForWork, loadBody } from '@gleaner/db';
import { EXTRACTOR_VERSION, extractPosting } from '@gleaner/extraction';
import type { JobHandler } from '../context.js';
import { ExtractError } from '../errors.js';
import { decodeBody } from '../decode-body.js';
import { LISTING_CONTENT_TYPE, mapListingPayload } from '../listing-payload.js';
import { settleAndFinalize } from './settle.js';

export const extractHandler: JobHandler<'extract'> = {
  async run(payload, deps) {
    const { db, log } = deps;
    const found = await getPostingForWork(db, payload.postingId);
    if (
      !found ||
      found.posting.runId !== payload.runId ||
      found.posting.status !== 'pending' ||
      found.runStatus !== 'running'
    ) {
      log.debug(
        { status: found?.posting.status },
        'posting not pending in a running run; skipping',
      );
      return { skipped: true };
    }
    const { posting } = found;
    if (!posting.bodySha256)
      throw new ExtractError('posting has no stored body', 'EXTRACT_BODY_MISSING', 'permanent');
    const stored = await loadBody(db, posting.bodySha256);
    if (!stored)
      throw new ExtractError(
        `body ${posting.bodySha256} is not stored`,
        'EXTRACT_BODY_MISSING',
        'permanent',
      );

    const result =
      stored.contentType === LISTING_CONTENT_TYPE
        ? mapListingPayload(found.site.kind, stored.body)
        : extractPosting(decodeBody(stored.body, stored.contentType), { url: posting.url });
    if (!result)
      throw new ExtractError('page holds no job posting', 'EXTRACT_NOT_A_POSTING', 'permanent');
    await settleAndFinalize(deps, log, payload, {
      status: 'ready',
      fields: {
        ...result.posting,
        provenance: result.provenance,
        extractionVersion: EXTRACTOR_VERSION,
      },
    });
    return { title: result.posting.title };
  },

  async giveUp(payload, error, deps) {
    await settleAndFinalize(deps, deps.log, payload, {
      status: 'error',
      error: `extract: ${error.message}`,
    });
  },
};
