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
  type ExtractedFields,
  type PostingSettle,
  type RunRequestCounts,
} from '@gleaner/db';

/** How a posting of a whole listing settles: unchanged, failed, or read with these fields. */
export type ListedOutcome = 'skipped' | 'error' | ExtractedFields;

/**
 * One whole run of a site, as the workers would do it, without them: lists the postings
 * `job-<i>` for each index (at `<urlBase>/<i>`), completely, settles each as `outcome` says
 * (`skipped`, unchanged, by default) and closes the run. Returns the closed run; throws when it
 * did not close.
 */
export async function runWholeListing(
  db: Database,
  siteId: string,
  indexes: readonly number[],
  {
    policy = DEFAULT_EXPIRY_POLICY,
    urlBase = 'https://example.com/jobs',
    outcome = () => 'skipped',
    requests,
  }: {
    policy?: ExpiryPolicy;
    /** The run's requests by answer, as the workers' counts would give them. */
    requests?: RunRequestCounts;
    urlBase?: string;
    outcome?: (index: number) => ListedOutcome;
  } = {},
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
      listed.map((posting): PostingSettle => {
        const target = { postingId: posting.id, runId: run.id };
        const index = Number(posting.externalId.slice('job-'.length));
        const settled = outcome(index);
        if (settled === 'skipped') return { ...target, status: 'skipped' };
        if (settled === 'error') return { ...target, status: 'error', error: 'page failed' };
        return {
          ...target,
          status: 'ready',
          contentType: 'text/html',
          sha256: `body-${index}`,
          textSha256: null,
          fields: settled,
        };
      }),
    );
  const closed = await finalizeRun(db, run.id, policy, {
    ...(requests && { requests: async () => requests }),
  });
  if (!closed) throw new Error(`run ${run.runId} did not close`);
  return closed;
}
