import { randomBytes } from 'node:crypto';
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import { ActiveRunExistsError, isUniqueViolation } from '../errors.js';
import { afterCursor, microsOf, pageOf } from './cursor.js';
import { activeRunStatuses, scrapeRuns, type RunRow, type RunTrigger } from '../schema.js';

/** Share of errored postings up to which a run is `partial` rather than `failed` (seed 003). */
export const PARTIAL_ERROR_RATIO = 0.3;

/** Public run id: `manual_1a2b3c4d5e6f` / `sched_…`; never all digits, never a colon. */
export function newPublicRunId(trigger: RunTrigger): string {
  return `${trigger === 'manual' ? 'manual' : 'sched'}_${randomBytes(6).toString('hex')}`;
}

export interface CreateRunInput {
  siteId: string;
  trigger: RunTrigger;
  resultsWanted?: number | null;
  correlationId?: string | null;
}

/** Creates a queued run; throws ActiveRunExistsError when the site already has one. */
export async function createRun(db: Database, input: CreateRunInput): Promise<RunRow> {
  try {
    const [row] = await db
      .insert(scrapeRuns)
      .values({
        runId: newPublicRunId(input.trigger),
        siteScheduleId: input.siteId,
        trigger: input.trigger,
        resultsWanted: input.resultsWanted ?? null,
        correlationId: input.correlationId ?? null,
      })
      .returning();
    return row!;
  } catch (error) {
    if (isUniqueViolation(error, 'scrape_runs_one_active_per_site'))
      throw new ActiveRunExistsError(input.siteId);
    throw error;
  }
}

export async function setRunTaskId(db: Database, id: string, taskId: string): Promise<void> {
  await db.update(scrapeRuns).set({ taskId, updatedAt: new Date() }).where(eq(scrapeRuns.id, id));
}

export async function getRun(db: Database, id: string): Promise<RunRow | undefined> {
  return db.query.scrapeRuns.findFirst({ where: eq(scrapeRuns.id, id) });
}

export async function getRunByPublicId(db: Database, runId: string): Promise<RunRow | undefined> {
  return db.query.scrapeRuns.findFirst({ where: eq(scrapeRuns.runId, runId) });
}

export async function getActiveRunForSite(
  db: Database,
  siteId: string,
): Promise<RunRow | undefined> {
  return db.query.scrapeRuns.findFirst({
    where: and(
      eq(scrapeRuns.siteScheduleId, siteId),
      inArray(scrapeRuns.status, [...activeRunStatuses]),
    ),
  });
}

/** A site's runs, newest first, one page at a time (`cursor` from the previous page). */
export async function listSiteRuns(
  db: Database,
  siteId: string,
  { limit, cursor }: { limit: number; cursor?: string },
): Promise<{ runs: RunRow[]; nextCursor: string | null }> {
  const rows = await db
    .select({ run: scrapeRuns, micros: microsOf(scrapeRuns.createdAt) })
    .from(scrapeRuns)
    .where(
      and(
        eq(scrapeRuns.siteScheduleId, siteId),
        cursor === undefined ? undefined : afterCursor(scrapeRuns.createdAt, scrapeRuns.id, cursor),
      ),
    )
    .orderBy(desc(scrapeRuns.createdAt), desc(scrapeRuns.id))
    .limit(limit + 1);
  const { page, nextCursor } = pageOf(rows, limit, (row) => ({
    micros: row.micros,
    id: row.run.id,
  }));
  return { runs: page.map((row) => row.run), nextCursor };
}

/** queued → running. Returns the run when it is running after the call (idempotent on retry). */
export async function startRun(db: Database, id: string): Promise<RunRow | undefined> {
  const [started] = await db
    .update(scrapeRuns)
    .set({
      status: 'running',
      startedAt: sql`coalesce(${scrapeRuns.startedAt}, now())`,
      updatedAt: new Date(),
    })
    .where(and(eq(scrapeRuns.id, id), inArray(scrapeRuns.status, ['queued', 'running'])))
    .returning();
  return started;
}

/** The scrape job listed everything it is going to: from now on the run may finalize. */
export async function completeListing(
  db: Database,
  id: string,
  listing: { requestedPages: number; listingComplete: boolean },
): Promise<void> {
  await db
    .update(scrapeRuns)
    .set({ ...listing, listingDone: true, updatedAt: new Date() })
    .where(and(eq(scrapeRuns.id, id), eq(scrapeRuns.status, 'running')));
}

/** Ends an active run as failed (listing failed for good). Returns false if it was not active. */
export async function failRun(db: Database, id: string, message: string): Promise<boolean> {
  const rows = await db
    .update(scrapeRuns)
    .set({
      status: 'failed',
      message: message.slice(0, 2000),
      finishedAt: new Date(),
      updatedAt: new Date(),
    })
    .where(and(eq(scrapeRuns.id, id), inArray(scrapeRuns.status, [...activeRunStatuses])))
    .returning({ id: scrapeRuns.id });
  return rows.length > 0;
}

const FINALIZE_RUN = `
    WITH closed AS (
      UPDATE scrape_runs r
      SET (status, ready_count, skipped_count, errors_count, completed_pages, expired_count, finished_at, updated_at) = (
        SELECT
          CASE WHEN t.errors = 0 THEN 'succeeded'
               WHEN t.errors::float8 / t.total <= ${PARTIAL_ERROR_RATIO} THEN 'partial'
               ELSE 'failed' END,
          t.ready, t.skipped, t.errors, t.ready + t.skipped,
          CASE WHEN t.errors = 0 AND t.total > 0 AND r.listing_complete THEN (
            SELECT count(*) FROM postings s
            WHERE s.site_id = r.site_schedule_id AND s.run_id IS DISTINCT FROM r.id AND s.status <> 'expired'
          ) ELSE 0 END,
          now(), now()
        FROM (
          SELECT count(*) AS total,
                 count(*) FILTER (WHERE p.status = 'ready') AS ready,
                 count(*) FILTER (WHERE p.status = 'skipped') AS skipped,
                 count(*) FILTER (WHERE p.status = 'error') AS errors
          FROM postings p WHERE p.run_id = r.id
        ) t
      )
      WHERE r.id = $1
        AND r.status = 'running'
        AND r.listing_done
        AND NOT EXISTS (SELECT 1 FROM postings p WHERE p.run_id = $1 AND p.status = 'pending')
      RETURNING r.*
    ), expired AS (
      UPDATE postings p SET status = 'expired', updated_at = now()
      FROM closed c
      WHERE c.expired_count > 0
        AND p.site_id = c.site_schedule_id
        AND p.run_id IS DISTINCT FROM c.id
        AND p.status <> 'expired'
      RETURNING p.id
    )
    SELECT c.id, (SELECT count(*) FROM expired)::int AS expired FROM closed c
  `;

/**
 * Closes a run exactly once: a single guarded statement that succeeds only while the run is
 * `running`, its listing is done and none of its postings is `pending`. Call it after the
 * caller's own posting update has COMMITTED — two workers whose uncommitted updates hid each
 * other would both see a pending posting and leave the run open. When two callers race, the
 * loser's UPDATE re-checks `status = 'running'` on the row the winner wrote and matches nothing.
 *
 * In the same statement, a run that ended `succeeded` after listing the whole site (and listed
 * at least one posting) expires the site's postings it did not list.
 * Returns the closed run, or undefined when this call did not close it.
 */
export async function finalizeRun(
  db: Database,
  id: string,
): Promise<(RunRow & { expired: number }) | undefined> {
  // Run after every settled batch: prepared once per connection rather than planned each time.
  const result = await db.$client.query<{ id: string; expired: number }>({
    name: 'gleaner-finalize-run',
    text: FINALIZE_RUN,
    values: [id],
  });
  const row = result.rows[0];
  if (!row) return undefined;
  const run = await getRun(db, id);
  return run ? { ...run, expired: Number(row.expired) } : undefined;
}
