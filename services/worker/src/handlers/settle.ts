import { finalizeRun, settlePosting, type Database, type ExtractedFields } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import type { WorkerDeps } from '../context.js';

/**
 * Moves a posting out of `pending` and then tries to close its run. The two statements are
 * separate on purpose: the finalize check must see this posting's committed status.
 */
export async function settleAndFinalize(
  deps: Pick<WorkerDeps, 'db'>,
  log: Logger,
  target: { runId: string; postingId: string },
  outcome:
    | { status: 'ready'; fields: ExtractedFields }
    | { status: 'skipped' }
    | { status: 'error'; error: string },
): Promise<boolean> {
  const settled = await settlePosting(deps.db, target.postingId, target.runId, outcome);
  await finalizeAndLog(deps.db, log, target.runId);
  return settled;
}

/** Tries to close the run (after the caller's settle has committed) and logs when it did. */
export async function finalizeAndLog(db: Database, log: Logger, runId: string): Promise<void> {
  const closed = await finalizeRun(db, runId);
  if (closed) {
    log.info(
      {
        status: closed.status,
        ready: closed.readyCount,
        skipped: closed.skippedCount,
        errors: closed.errorsCount,
        expired: closed.expired,
      },
      'run finalized',
    );
  }
}
