import { mergeSyncedPosting, readSyncCandidates, settleRunSync } from '@gleaner/db';
import { matchPostings } from '@gleaner/llm';
import type { JobHandler } from '../context.js';
import { llmOf, providerCallHooks, waitingOutLimits } from './provider-calls.js';

/** Postings of each kind one sync compares at most: one prompt, a few thousand tokens each. */
export const SYNC_MAX_POSTINGS = 40;

/**
 * Seed 004's SyncPostsJob with `use_llm_sync` (decision 0025), for a run that has listed and
 * read everything: the postings it found for the first time and the site's postings it did not
 * list again are shown to the model (the primary model, one call), each match it proposes is
 * kept only when grounded (`matchPostings`), and each kept match is merged so that the earlier
 * posting keeps its id and history under its new URL. Then the run's sync is done and the run
 * closes. Nothing to compare (no new posting, or none missing) asks no model. A job that gives up
 * leaves the postings as they are (the sync `failed`) and the run closes without it.
 */
export const llmSyncHandler: JobHandler<'llm-sync'> = {
  async run(payload, context) {
    const { db, log } = context;
    const llm = llmOf(context, 'llm-sync');
    const candidates = await readSyncCandidates(db, payload.runId, { limit: SYNC_MAX_POSTINGS });
    if (!candidates) {
      log.debug('run not waiting for its sync; skipping');
      return { skipped: true };
    }
    let merged = 0;
    if (candidates.fresh.length > 0 && candidates.missing.length > 0) {
      const tenant = candidates.tenantId ?? `site:${candidates.siteId}`;
      const result = await waitingOutLimits(context, () =>
        matchPostings(llm.client, {
          fresh: candidates.fresh,
          missing: candidates.missing,
          model: llm.settings.primaryModel,
          maxTokens: llm.settings.maxTokens,
          signal: context.signal,
          hooks: providerCallHooks(context, llm, tenant),
        }),
      );
      for (const refused of result.refused)
        log.info(refused, 'sync match not grounded; the postings stay apart');
      for (const match of result.matches) {
        const done = await mergeSyncedPosting(db, {
          runId: payload.runId,
          freshId: match.freshId,
          existingId: match.existingId,
          decision: { model: result.model, evidence: match.evidence, reason: match.reason },
        });
        if (!done) continue;
        merged += 1;
        log.info(
          { posting: match.existingId, duplicate: match.freshId, reason: match.reason },
          'posting found again under a new URL: it keeps its id and history',
        );
      }
    }
    await settleRunSync(db, payload.runId, 'done');
    log.info(
      { fresh: candidates.fresh.length, missing: candidates.missing.length, merged },
      'run synced',
    );
    await context.settlement.closeRunIfDone(payload.runId);
    return { merged };
  },
};
