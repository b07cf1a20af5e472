import {
  completeListing,
  createRun,
  DEFAULT_EXPIRY_POLICY,
  finalizeRun,
  settlePostings,
  startRun,
  upsertListedPostings,
  type Database,
  type ExpiryPolicy,
  type FinalizedRun,
} from '@gleaner/db';

/**
 * One whole run of a site, as the workers would do it, without them: lists the postings
 * `job-<i>` for each index (at `<urlBase>/<i>`), completely, settles each `skipped` (unchanged)
 * and closes the run. Returns the closed run; throws when it did not close.
 */
export async function runWholeListing(
  db: Database,
  siteId: string,
  indexes: readonly number[],
  {
    policy = DEFAULT_EXPIRY_POLICY,
    urlBase = 'https://example.com/jobs',
  }: { policy?: ExpiryPolicy; urlBase?: string } = {},
): Promise<FinalizedRun> {
  const run = await createRun(db, { siteId, trigger: 'manual' });
  await startRun(db, run.id);
  const listed = await upsertListedPostings(
    db,
    siteId,
    run.id,
    indexes.map((i) => ({ externalId: `job-${i}`, url: `${urlBase}/${i}` })),
  );
  await completeListing(db, run.id, { requestedPages: listed.length, listingComplete: true });
  if (listed.length > 0)
    await settlePostings(
      db,
      listed.map((posting) => ({ postingId: posting.id, runId: run.id, status: 'skipped' })),
    );
  const closed = await finalizeRun(db, run.id, policy);
  if (!closed) throw new Error(`run ${run.runId} did not close`);
  return closed;
}
