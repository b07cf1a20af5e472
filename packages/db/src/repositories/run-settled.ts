/**
 * When the run `r` (whose id is the SQL expression `runId`) has done its work: running, listed,
 * nothing of it pending, and a `postsOnListing` site's pages read through all their passes
 * (decision 0026). What closes it, and what its LLM sync waits for.
 */
export const runSettled = (runId: string) => `r.status = 'running' AND r.listing_done
        AND NOT EXISTS (SELECT 1 FROM postings p WHERE p.run_id = ${runId} AND p.status = 'pending')
        AND coalesce(r.pages_state, 'done') = 'done'`;
