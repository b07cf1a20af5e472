import { getPostingForWork, loadBody } from '@gleaner/db';
import type { JobHandler } from '../context.js';
import { ExtractError } from '../errors.js';
import { extractFields } from '../extract-fields.js';
import { settleAndFinalize } from './settle.js';

/**
 * Extracts a posting from its stored body: the pages the crawl job could not settle, retried
 * without fetching again.
 */
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

    const fields = extractFields({
      siteKind: found.site.kind,
      url: posting.url,
      body: stored.body,
      contentType: stored.contentType,
    });
    await settleAndFinalize(deps, log, payload, { status: 'ready', fields });
    return { title: fields.title };
  },

  async giveUp(payload, error, deps) {
    await settleAndFinalize(deps, deps.log, payload, {
      status: 'error',
      error: `extract: ${error.message}`,
    });
  },
};
