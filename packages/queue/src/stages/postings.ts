import { listQuietPendingPostings, type QuietPendingPosting } from '@gleaner/db';
import type { LedgerContext, ReconcileScope } from './ledger.js';

/**
 * The rows of the crawl and extract stages: pending postings of the running runs whose listing
 * is done, quiet past the grace period. A posting whose page this run stored waits for its
 * extract job; one whose page it did not, for its crawl job.
 */
export async function quietPostings(
  { db, runs, graceMs, limit }: ReconcileScope,
  stage: 'crawl' | 'extract',
): Promise<QuietPendingPosting[]> {
  const running = runs.filter((run) => run.status === 'running' && run.listingDone);
  return listQuietPendingPostings(
    db,
    running.map((run) => run.id),
    graceMs,
    limit,
    { bodyRecorded: stage === 'extract' },
  );
}

/** The correlation id of a posting's run, for the job added again. */
export function correlationOf(scope: ReconcileScope, runId: string): string | undefined {
  return scope.runs.find((run) => run.id === runId)?.correlationId ?? undefined;
}

/** A failed posting's `error`: its message prefixed by the stage that failed it. */
export function postingFailureError(stage: string, reason: string): string {
  return `${stage}: ${reason}`;
}

/** Settles each failed posting `error`, its message prefixed by the stage that failed it. */
export async function settleFailedPostings(
  context: LedgerContext,
  stage: string,
  failures: readonly { payload: { runId: string; postingId: string }; reason: string }[],
): Promise<number> {
  if (failures.length === 0) return 0;
  const settled = await context.settlePostings(
    failures.map(({ payload, reason }) => ({
      status: 'error' as const,
      postingId: payload.postingId,
      runId: payload.runId,
      error: postingFailureError(stage, reason),
    })),
  );
  return settled.size;
}
