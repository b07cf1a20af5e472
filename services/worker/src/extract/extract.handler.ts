import { loadBody } from '@gleaner/db';
import type { JobHandler } from '../context.js';
import { extractBodyFields } from '../page-analysis/body-fields.js';
import { ExtractError } from '../page-analysis/page-fields.js';

/**
 * Extracts a posting from its stored body: the pages the crawl job could not settle, retried
 * without fetching again.
 */
export const extractHandler: JobHandler<'extract'> = {
  async run(payload, { db, log, settlement }) {
    const posting = await settlement.pendingWork(payload);
    if (!posting) {
      log.debug('posting not pending in a running run; skipping');
      return { skipped: true };
    }
    if (!posting.bodySha256)
      throw new ExtractError('posting has no stored body', 'EXTRACT_BODY_MISSING', 'permanent');
    const stored = await loadBody(db, posting.bodySha256);
    if (!stored)
      throw new ExtractError(
        `body ${posting.bodySha256} is not stored`,
        'EXTRACT_BODY_MISSING',
        'permanent',
      );

    const fields = extractBodyFields({
      siteKind: posting.site.kind,
      url: posting.url,
      body: stored.body,
      contentType: stored.contentType,
    });
    await settlement.settle({
      status: 'ready',
      postingId: posting.id,
      runId: payload.runId,
      contentType: stored.contentType,
      sha256: posting.bodySha256,
      textSha256: posting.textSha256,
      fields,
    });
    return { title: fields.title };
  },

  async giveUp(payload, error, { settlement }) {
    await settlement.settle({ ...payload, status: 'error', error: `extract: ${error.message}` });
  },
};
