import type { Database } from '../client.js';

/**
 * What the reconciler reads to compare Postgres (the truth) with Redis (the work). Its repairs go
 * through the paths the workers and the API use (settles, `finalizeRun`, `failRunPastDeadline`).
 */

/** A queued or running run, as the reconciler sees it. */
export interface ActiveRun {
  id: string;
  runId: string;
  siteId: string;
  status: 'queued' | 'running';
  listingDone: boolean;
  correlationId: string | null;
  createdAt: Date;
  /** Milliseconds since the row last changed (start, listing done): how long it has been quiet. */
  quietMs: number;
}

/** Active runs, oldest first (the `scrape_runs_one_active_per_site` index holds exactly them). */
export async function listActiveRuns(db: Database, limit: number): Promise<ActiveRun[]> {
  const { rows } = await db.$client.query<{
    id: string;
    run_id: string;
    site_schedule_id: string;
    status: 'queued' | 'running';
    listing_done: boolean;
    correlation_id: string | null;
    created_at: Date;
    quiet_ms: number;
  }>({
    name: 'gleaner-active-runs',
    text: `
      SELECT id, run_id, site_schedule_id, status, listing_done, correlation_id, created_at,
             (extract(epoch FROM now() - updated_at) * 1000)::float8 AS quiet_ms
      FROM scrape_runs WHERE status IN ('queued', 'running')
      ORDER BY created_at LIMIT $1`,
    values: [limit],
  });
  return rows.map((row) => ({
    id: row.id,
    runId: row.run_id,
    siteId: row.site_schedule_id,
    status: row.status,
    listingDone: row.listing_done,
    correlationId: row.correlation_id,
    createdAt: row.created_at,
    quietMs: row.quiet_ms,
  }));
}

/** A posting still pending in a running run, unchanged for longer than the grace period. */
export interface QuietPendingPosting {
  id: string;
  runId: string;
  siteId: string;
  /** Its page was fetched and stored in this run: what is left is the extract stage. */
  bodyRecorded: boolean;
  /** Its site's `max_retries`: the attempts its crawl job is added again with. */
  maxRetries: number;
}

/**
 * Pending postings of the given runs whose row has not changed for `quietMs`, oldest first. A
 * posting's job is added right after its row is written, so a row this quiet whose job Redis
 * does not have lost it.
 */
export async function listQuietPendingPostings(
  db: Database,
  runIds: readonly string[],
  quietMs: number,
  limit: number,
  /** Only those whose page this run stored (true), or only those whose page it did not (false). */
  { bodyRecorded }: { bodyRecorded?: boolean } = {},
): Promise<QuietPendingPosting[]> {
  if (runIds.length === 0) return [];
  const { rows } = await db.$client.query<{
    id: string;
    run_id: string;
    site_id: string;
    body_recorded: boolean;
    max_retries: number;
  }>({
    name: 'gleaner-quiet-pending-postings',
    text: `
      SELECT * FROM (
        SELECT p.id, p.run_id, p.site_id, p.updated_at, s.max_retries,
               (p.body_sha256 IS NOT NULL AND p.fetched_at >= r.started_at) AS body_recorded
        FROM postings p JOIN scrape_runs r ON r.id = p.run_id
          JOIN site_schedules s ON s.id = p.site_id
        WHERE p.run_id = ANY($1::uuid[]) AND p.status = 'pending'
          AND p.updated_at < now() - make_interval(secs => $2::float8 / 1000)
          -- A page handed to the LLM waits for its extraction, which has its own repairs.
          AND NOT EXISTS (SELECT 1 FROM llm_extractions e
                          WHERE e.subject_type = 'posting' AND e.subject_id = p.id
                            AND e.status IN ('queued', 'processing'))
      ) quiet
      WHERE $4::boolean IS NULL OR body_recorded = $4::boolean
      ORDER BY updated_at LIMIT $3`,
    values: [runIds, quietMs, limit, bodyRecorded ?? null],
  });
  return rows.map((row) => ({
    id: row.id,
    runId: row.run_id,
    siteId: row.site_id,
    bodyRecorded: row.body_recorded,
    maxRetries: row.max_retries,
  }));
}
