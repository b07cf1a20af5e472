import type { ExtractedFields } from '@gleaner/db';
import type { JobHandler } from '../context.js';
import { handPostingToLlm, needsLlm } from '../llm/handoff.js';
import { loadStoredPage } from '../page-analysis/body-fields.js';
import { toExtractError } from '../page-analysis/page-fields.js';
import {
  ensureSiteTemplate,
  noteTemplateFit,
  waitForFirstTemplate,
} from '../templates/site-templates.js';

/**
 * Extracts a posting from its stored body: the pages the crawl job could not settle, retried
 * without fetching again, with the site's template (learned here when that is due). The page is
 * read in the page analyser's threads, under the job's signal and the page's time budget
 * (`EXTRACT_PAGE_TOO_SLOW`, permanent), never on the event loop. A page without a posting, or
 * without a required field, goes to the LLM stage instead when its site asks for it (and stays
 * pending until that settles it); otherwise one without a posting, met before its site has a
 * template, waits for the first while its run still has pages to fetch.
 */
export const extractHandler: JobHandler<'extract'> = {
  async run(payload, context) {
    const { db, log, settlement, analyser, signal } = context;
    const posting = await settlement.pendingWork(payload);
    if (!posting) {
      log.debug('posting not pending in a running run; skipping');
      return { skipped: true };
    }
    const stored = await loadStoredPage(db, posting);
    // The pages the rules could not settle are where a site's template earns its keep: learned
    // here once the site has pages enough (decision 0028).
    const template =
      posting.listingPayload === null
        ? await ensureSiteTemplate(context, posting.site.id, payload.runId)
        : null;
    const reading = await analyser.read(
      {
        body: stored.body,
        contentType: stored.contentType,
        siteKind: posting.site.kind,
        url: posting.url,
        wantsText: false,
        ...(template && { template: template.template }),
      },
      signal,
    );
    await noteTemplateFit(context, posting.site.id, template, reading.templateFit, {
      sha256: stored.sha256,
      fetchedAt: posting.fetchedAt,
    });
    const fields: ExtractedFields | null = reading.fields ?? null;
    if (reading.extractionError) {
      const error = toExtractError(reading.extractionError);
      // No posting the rules can read: the LLM stage may still find one, when the site asks.
      if (error.code !== 'EXTRACT_NOT_A_POSTING') throw error;
      if (!needsLlm(context, posting.site, null)) {
        // A site's first pages come before its template: one learned from the run's next
        // pages may read this one (the LLM stage waits for it the same way).
        if (template === null && posting.listingPayload === null)
          await waitForFirstTemplate(context, { ...posting, runId: payload.runId });
        throw error;
      }
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
};
