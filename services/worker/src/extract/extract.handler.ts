import type { ExtractedFields } from '@gleaner/db';
import type { JobHandler } from '../context.js';
import { handPostingToLlm, needsLlm } from '../llm/handoff.js';
import { extractBodyFields, loadStoredPage } from '../page-analysis/body-fields.js';
import { ExtractError } from '../page-analysis/page-fields.js';

/**
 * Extracts a posting from its stored body: the pages the crawl job could not settle, retried
 * without fetching again. A page without a posting, or without a required field, goes to the LLM
 * stage instead when its site asks for it (and stays pending until that settles it).
 */
export const extractHandler: JobHandler<'extract'> = {
  async run(payload, context) {
    const { db, log, settlement } = context;
    const posting = await settlement.pendingWork(payload);
    if (!posting) {
      log.debug('posting not pending in a running run; skipping');
      return { skipped: true };
    }
    const stored = await loadStoredPage(db, posting);

    let fields: ExtractedFields | null = null;
    try {
      fields = extractBodyFields({
        siteKind: posting.site.kind,
        url: posting.url,
        body: stored.body,
        contentType: stored.contentType,
      });
    } catch (error) {
      // No posting the rules can read: the LLM stage may still find one, when the site asks.
      if (!(error instanceof ExtractError && error.code === 'EXTRACT_NOT_A_POSTING')) throw error;
      if (!needsLlm(context, posting.site, null)) throw error;
    }
    if (!fields || needsLlm(context, posting.site, fields)) {
      await handPostingToLlm(
        context,
        { id: posting.id, siteId: posting.site.id },
        payload.correlationId,
      );
      return { llmQueued: true };
    }
    await settlement.settle({
      status: 'ready',
      postingId: posting.id,
      runId: payload.runId,
      contentType: stored.contentType,
      sha256: stored.sha256,
      textSha256: posting.textSha256,
      fields,
    });
    log.debug({ title: fields.title }, 'posting extracted from its stored page');
    return { title: fields.title };
  },

  async giveUp(payload, error, { settlement }) {
    await settlement.settle({ ...payload, status: 'error', error: `extract: ${error.message}` });
  },
};
