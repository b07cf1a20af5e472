import { randomBytes } from 'node:crypto';
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Database } from '../client.js';
import { adaptSiteCadence } from './cadence.js';
import { runSettled } from './run-settled.js';
import { ActiveRunExistsError, isUniqueViolation } from '../errors.js';
import { withoutNul } from '../pg-text.js';
import { afterCursor, microsOf, pageOf } from './cursor.js';
import { preparedFor } from './prepared.js';
import {
  activeRunStatuses,
  scrapeRuns,
  siteSchedules,
  type PostingStatus,
  type RunRow,
  type RunTrigger,
  type RunSearch,
} from '../schema.js';

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
  /** The run's own search over a search-driven site's saved one; none for the saved search. */
  search?: RunSearch | null;
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
        search: input.search ?? null,
        // A use_llm_sync site's run syncs before it closes (decision 0025).
        syncState: sql`(SELECT CASE WHEN s.use_llm_sync THEN 'pending' END
                        FROM site_schedules s WHERE s.id = ${input.siteId})`,
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

/** How people know a run: its public id and its site's name (log lines, the run page). */
export interface RunLabel {
  /** `scrape_runs.id`. */
  id: string;
  /** The public id, `manual_…` or `sched_…`. */
  runId: string;
  siteName: string;
  /** The run's scrape job id (seed 003's `task_id`). */
  taskId: string | null;
}

/** The label of a run, by its id or by a posting it lists (the posting's current run). */
export async function getRunLabel(
  db: Database,
  by: { id: string } | { postingId: string },
): Promise<RunLabel | undefined> {
  const { rows } = await db.$client.query<{
    id: string;
    run_id: string;
    site_name: string;
    task_id: string | null;
  }>(
    'id' in by
      ? {
          name: 'gleaner-run-label',
          text: `SELECT r.id, r.run_id, s.site_name, r.task_id FROM scrape_runs r
                 JOIN site_schedules s ON s.id = r.site_schedule_id WHERE r.id = $1`,
          values: [by.id],
        }
      : {
          name: 'gleaner-posting-run-label',
          text: `SELECT r.id, r.run_id, s.site_name, r.task_id FROM postings p
                 JOIN scrape_runs r ON r.id = p.run_id
                 JOIN site_schedules s ON s.id = r.site_schedule_id WHERE p.id = $1`,
          values: [by.postingId],
        },
  );
  const row = rows[0];
  return row && { id: row.id, runId: row.run_id, siteName: row.site_name, taskId: row.task_id };
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

/**
 * When a site's postings expire (decision 0019). A posting expires once `expireAfterMisses`
 * complete listings in a row did not list it (a site's `expire_after_misses` overrides it), and a
 * listing that finds fewer than `(1 − listingDropGuard)` of the median of the site's last
 * LISTING_HISTORY complete listings counts no miss at all: a board that answers short once, or
 * empty, is not a board whose postings all closed.
 */
export interface ExpiryPolicy {
  expireAfterMisses: number;
  listingDropGuard: number;
  /**
   * The drift alerts the same statement raises (decision 0021): a run whose share of postings
   * in `error` is at least this much above the median share of the site's last closed runs
   * raises `error_rate`; 1 turns it off.
   */
  errorRateRise: number;
  /** The same for the share of the postings a run read without title, company or location. */
  fieldsMissingRise: number;
  /**
   * The same for the shares of a run's requests to its site answered 4xx (429 aside), 5xx, 429
   * or not at all, each on its own: `http_errors`.
   */
  httpErrorsRise: number;
}

/**
 * A run's requests to its site's server (its listing and its pages, retries included) by how they
 * were answered; what `http_errors` judges. Counted in Redis while the run goes on.
 */
export interface RunRequestCounts {
  requests: number;
  /** 4xx other than 429. */
  clientErrors: number;
  serverErrors: number;
  rateLimited: number;
  /** No answer: a timeout, a refused or reset connection. */
  unanswered: number;
}

export const DEFAULT_EXPIRY_POLICY: ExpiryPolicy = {
  expireAfterMisses: 2,
  listingDropGuard: 0.3,
  errorRateRise: 0.2,
  fieldsMissingRise: 0.2,
  httpErrorsRise: 0.2,
};

/** Complete listings of a site, before this run's, whose median the listing guard compares with. */
export const LISTING_HISTORY = 5;

/**
 * The run `r` of id $1 done with its work. Asked first on its own (`RUN_CLOSABLE`), then again by
 * the closing statement on the row it updates.
 */
const RUN_SETTLED = runSettled('$1');

/** … and, for a `use_llm_sync` site, its sync done (decision 0025). */
const RUN_MAY_CLOSE = `${RUN_SETTLED} AND r.sync_state IS DISTINCT FROM 'pending'`;

/** A run's postings (errors) or postings read (fields missing) below which its shares raise nothing. */
export const DRIFT_ALERT_MIN_POSTINGS = 5;

/** A run's requests below which their shares raise nothing. */
export const DRIFT_ALERT_MIN_REQUESTS = 10;

/** The answers `http_errors` judges: its class name, the run's count column, how the message says it. */
const REQUEST_CLASSES = [
  ['4xx', 'client_errors', 'answered 4xx'],
  ['5xx', 'server_errors', 'answered 5xx'],
  ['429', 'rate_limited', 'answered 429'],
  ['unanswered', 'unanswered', 'not answered'],
] as const;

/**
 * The median over the site's last LISTING_HISTORY closed runs (other than run `r`) of a share of
 * theirs, `numerator / denominator`, both expressions over `scrape_runs h`; runs whose
 * denominator is 0 or whose numerator was never counted have no share and do not count. Null
 * when no run has one.
 */
const historyMedian = (numerator: string, denominator: string) => `
             (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY h.share)
              FROM (SELECT ${numerator}::float8 / ${denominator} AS share FROM scrape_runs h
                    WHERE h.site_schedule_id = r.site_schedule_id AND h.id <> r.id
                      AND h.status IN ('succeeded', 'partial', 'failed') AND ${denominator} > 0
                      AND ${numerator} IS NOT NULL
                    ORDER BY h.created_at DESC LIMIT ${LISTING_HISTORY}) h)`;

/** Per class: the median of its share over the site's last runs (`median_<column>`). */
const REQUEST_MEDIANS = REQUEST_CLASSES.map(
  ([, column]) => `${historyMedian(`h.${column}_count`, 'h.requests_count')} AS median_${column}`,
).join(',\n');
/** Per class: its name when the run's share rose past its median, else null. */
const REQUEST_DRIFTS = REQUEST_CLASSES.map(
  ([name, column]) =>
    `CASE WHEN run.${column}::float8 / run.requests >= run.median_${column} + $11::float8 THEN '${name}' END`,
).join(',\n');
/** Per class, for the alert's message: its name, the run's count, its median, how it is said. */
const REQUEST_ROWS = REQUEST_CLASSES.map(
  ([name, column, label]) => `('${name}', c.${column}, c.median_${column}, '${label}')`,
).join(',\n');

const FINALIZE_RUN = `
    WITH counts AS (
      SELECT count(*) AS total,
             count(*) FILTER (WHERE p.status = 'ready') AS ready,
             count(*) FILTER (WHERE p.status = 'skipped') AS skipped,
             count(*) FILTER (WHERE p.status = 'error') AS errors,
             count(*) FILTER (WHERE p.status = 'ready' AND nullif(btrim(p.title), '') IS NULL)
               AS missing_title,
             count(*) FILTER (WHERE p.status = 'ready' AND nullif(btrim(p.company), '') IS NULL)
               AS missing_company,
             count(*) FILTER (WHERE p.status = 'ready' AND nullif(btrim(p.location), '') IS NULL)
               AS missing_location
      FROM postings p WHERE p.run_id = $1
    ), run AS (
      SELECT r.id, r.site_schedule_id, r.requested_pages AS listed, s.adaptive,
             coalesce(s.expire_after_misses, $2::int) AS misses_allowed,
             (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY h.requested_pages)
              FROM (SELECT h.requested_pages FROM scrape_runs h
                    WHERE h.site_schedule_id = r.site_schedule_id AND h.id <> r.id
                      AND h.listing_complete AND h.status IN ('succeeded', 'partial')
                    ORDER BY h.created_at DESC LIMIT ${LISTING_HISTORY}) h) AS median_listed,
             ${historyMedian('h.errors_count', '(h.ready_count + h.skipped_count + h.errors_count)')} AS median_error_share,
             ${historyMedian('h.missing_title_count', 'h.ready_count')} AS median_missing_title,
             ${historyMedian('h.missing_company_count', 'h.ready_count')} AS median_missing_company,
             ${historyMedian('h.missing_location_count', 'h.ready_count')} AS median_missing_location,
             $6::int AS requests, $7::int AS client_errors, $8::int AS server_errors,
             $9::int AS rate_limited, $10::int AS unanswered,
             ${REQUEST_MEDIANS},
             -- A listing that may count misses: whole, clean, and with at least one posting.
             (t.errors = 0 AND t.total > 0 AND r.listing_complete) AS counts_misses,
             r.listing_complete,
             t.*
      FROM scrape_runs r JOIN site_schedules s ON s.id = r.site_schedule_id, counts t
      WHERE r.id = $1
    ), judged AS (
      SELECT run.*,
             -- The guard: a complete listing far below the site's usual size, empty included.
             -- A site with no complete listing before has no median: nothing to hold against.
             coalesce(run.listing_complete AND run.errors = 0 AND run.median_listed > 0
              AND run.listed < (1 - $3::float8) * run.median_listed, false) AS held,
             -- Drift (decision 0021): a share at least the rise above its median over the
             -- site's last runs, over enough postings to say so. A site with no such run has no
             -- median and is not judged; a rise of 1 is off.
             run.total >= ${DRIFT_ALERT_MIN_POSTINGS} AND run.median_error_share IS NOT NULL
              AS judges_errors,
             coalesce(run.total >= ${DRIFT_ALERT_MIN_POSTINGS} AND $4::float8 < 1
              AND run.errors::float8 / nullif(run.total, 0) >= run.median_error_share + $4::float8,
              false) AS error_drift,
             run.ready >= ${DRIFT_ALERT_MIN_POSTINGS} AND run.median_missing_title IS NOT NULL
              AS judges_fields,
             -- The fields whose share of postings read without them rose.
             CASE WHEN run.ready >= ${DRIFT_ALERT_MIN_POSTINGS} AND $5::float8 < 1 THEN
               array_remove(ARRAY[
                 CASE WHEN run.missing_title::float8 / nullif(run.ready, 0) >= run.median_missing_title + $5::float8 THEN 'title' END,
                 CASE WHEN run.missing_company::float8 / nullif(run.ready, 0) >= run.median_missing_company + $5::float8 THEN 'company' END,
                 CASE WHEN run.missing_location::float8 / nullif(run.ready, 0) >= run.median_missing_location + $5::float8 THEN 'location' END
               ], NULL)
             ELSE '{}'::text[] END AS drifted_fields,
             coalesce(run.requests >= ${DRIFT_ALERT_MIN_REQUESTS}
              AND run.median_client_errors IS NOT NULL, false) AS judges_requests,
             -- The classes of answers whose share of the run's requests rose.
             CASE WHEN coalesce(run.requests >= ${DRIFT_ALERT_MIN_REQUESTS}, false)
                   AND $11::float8 < 1 THEN
               array_remove(ARRAY[
                 ${REQUEST_DRIFTS}
               ], NULL)
             ELSE '{}'::text[] END AS drifted_requests
      FROM run
    ), closed AS (
      UPDATE scrape_runs r
      SET (status, ready_count, skipped_count, errors_count, missing_title_count,
           missing_company_count, missing_location_count, requests_count, client_errors_count,
           server_errors_count, rate_limited_count, unanswered_count, completed_pages,
           expired_count, message, finished_at, updated_at) = (
        CASE WHEN j.errors = 0 THEN CASE WHEN j.held THEN 'partial' ELSE 'succeeded' END
             WHEN j.errors::float8 / j.total <= ${PARTIAL_ERROR_RATIO} THEN 'partial'
             ELSE 'failed' END,
        j.ready, j.skipped, j.errors, j.missing_title, j.missing_company, j.missing_location,
        j.requests, j.client_errors, j.server_errors, j.rate_limited, j.unanswered,
        j.ready + j.skipped,
        CASE WHEN j.counts_misses AND NOT j.held THEN (
          SELECT count(*) FROM postings s
          WHERE s.site_id = j.site_schedule_id AND s.run_id IS DISTINCT FROM j.id
            AND s.status <> 'expired' AND s.missed_listings + 1 >= j.misses_allowed
        ) ELSE 0 END,
        CASE WHEN j.held THEN format(
          'listing guard: the listing found %s postings, under %s%% of the median %s of the site''s last complete listings; no posting was counted missed or expired',
          j.listed, round((1 - $3::numeric) * 100), j.median_listed)
        ELSE r.message END,
        now(), now()
      )
      FROM judged j
      WHERE r.id = j.id AND ${RUN_MAY_CLOSE}
      RETURNING r.message, r.status AS closed_status, j.*
    ), raised AS (
      -- One open alert per site and kind, seen again by each run that finds the cause again.
      INSERT INTO site_alerts (site_id, kind, run_id, message, details)
      SELECT c.site_schedule_id, a.kind, c.id, a.message, a.details
      FROM closed c CROSS JOIN LATERAL (VALUES
        ('listing_drop', c.held, c.message,
         jsonb_build_object('listed', c.listed, 'median_listed', c.median_listed,
                            'listing_drop_guard', $3::float8)),
        ('error_rate', c.error_drift,
         format('error rate: %s of the run''s %s postings ended in error (%s%%), against a median of %s%% over the site''s last runs',
                c.errors, c.total, round(100.0 * c.errors / nullif(c.total, 0)),
                round(100 * c.median_error_share::numeric)),
         jsonb_build_object('errors', c.errors, 'postings', c.total,
                            'median_share', c.median_error_share, 'rise', $4::float8)),
        ('fields_missing', cardinality(c.drifted_fields) > 0,
         format('fields missing: of the %s postings the run read, %s',
                c.ready,
                array_to_string(ARRAY(
                  SELECT format('%s have no %s (%s%%, against a median of %s%% over the site''s last runs)',
                                f.missing, f.field, round(100.0 * f.missing / nullif(c.ready, 0)),
                                round(100 * f.median::numeric))
                  FROM (VALUES ('title', c.missing_title, c.median_missing_title),
                               ('company', c.missing_company, c.median_missing_company),
                               ('location', c.missing_location, c.median_missing_location))
                       AS f(field, missing, median)
                  WHERE f.field = ANY (c.drifted_fields)), '; ')),
         jsonb_build_object('read', c.ready, 'fields', to_jsonb(c.drifted_fields),
                            'missing', jsonb_build_object('title', c.missing_title,
                              'company', c.missing_company, 'location', c.missing_location),
                            'median_share', jsonb_build_object('title', c.median_missing_title,
                              'company', c.median_missing_company,
                              'location', c.median_missing_location),
                            'rise', $5::float8)),
        ('http_errors', cardinality(c.drifted_requests) > 0,
         format('http errors: of the %s requests the run made to the site, %s',
                c.requests,
                array_to_string(ARRAY(
                  SELECT format('%s were %s (%s%%, against a median of %s%% over the site''s last runs)',
                                f.answered, f.label, round(100.0 * f.answered / nullif(c.requests, 0)),
                                round(100 * f.median::numeric))
                  FROM (VALUES ${REQUEST_ROWS})
                       AS f(class, answered, median, label)
                  WHERE f.class = ANY (c.drifted_requests)), '; ')),
         jsonb_build_object('requests', c.requests, 'classes', to_jsonb(c.drifted_requests),
                            'answers', jsonb_build_object(${REQUEST_CLASSES.map(([name, column]) => `'${name}', c.${column}`).join(', ')}),
                            'median_share', jsonb_build_object(${REQUEST_CLASSES.map(([name, column]) => `'${name}', c.median_${column}`).join(', ')}),
                            'rise', $11::float8))
      ) AS a(kind, raise, message, details)
      WHERE a.raise
      ON CONFLICT (site_id, kind) WHERE resolved_at IS NULL DO UPDATE
      SET run_id = excluded.run_id, message = excluded.message, details = excluded.details,
          occurrences = site_alerts.occurrences + 1, last_seen_at = now()
    ), resolved AS (
      -- A run that judged a cause and did not find it resolves its alert; any closed run
      -- resolves the site's overdue one.
      UPDATE site_alerts a SET resolved_at = now(), resolved_by_run_id = c.id
      FROM closed c
      WHERE a.site_id = c.site_schedule_id AND a.resolved_at IS NULL
        AND CASE a.kind
              WHEN 'listing_drop' THEN c.counts_misses AND NOT c.held
              WHEN 'error_rate' THEN c.judges_errors AND NOT c.error_drift
              WHEN 'fields_missing' THEN c.judges_fields AND cardinality(c.drifted_fields) = 0
              WHEN 'http_errors' THEN c.judges_requests AND cardinality(c.drifted_requests) = 0
              WHEN 'overdue' THEN true
              ELSE false
            END
    ), missed AS (
      UPDATE postings p
      SET missed_listings = p.missed_listings + 1,
          status = CASE WHEN p.missed_listings + 1 >= c.misses_allowed THEN 'expired' ELSE p.status END,
          updated_at = now()
      FROM closed c
      WHERE c.counts_misses AND NOT c.held
        AND p.site_id = c.site_schedule_id
        AND p.run_id IS DISTINCT FROM c.id
        AND p.status <> 'expired'
      RETURNING p.status
    )
    SELECT c.id, c.held, c.adaptive AND c.closed_status = 'succeeded' AS adapts,
           (SELECT count(*) FROM missed WHERE status = 'expired')::int AS expired,
           (SELECT count(*) FROM missed)::int AS missed
    FROM closed c
  `;

const RUN_CLOSABLE = `SELECT r.sync_state = 'pending' AS awaiting_sync, r.site_schedule_id
  FROM scrape_runs r
  WHERE r.id = $1 AND ${RUN_SETTLED}`;

/** A run `finalizeRun` closed: its row, what its listing expired and missed, and the guard's say. */
export type FinalizedRun = RunRow & {
  expired: number;
  /** Postings of the site this listing did not list and that stay open for now. */
  missed: number;
  /** The listing guard held this run's listing back from counting misses (decision 0019). */
  listingGuard: boolean;
};

/**
 * What a finalized run's log line carries, and its level: a run the listing guard held is a
 * warning (the site's board answered short), the rest are news.
 */
export function finalizedRunLog(run: FinalizedRun): {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
} {
  return {
    level: run.listingGuard ? 'warn' : 'info',
    fields: {
      runId: run.id,
      run: run.runId,
      // Seed 003's correlation fields: the public run id, its scrape job, and what happened.
      run_id: run.runId,
      task_id: run.taskId,
      event: 'finished',
      siteId: run.siteScheduleId,
      status: run.status,
      ready: run.readyCount,
      skipped: run.skippedCount,
      errors: run.errorsCount,
      expired: run.expired,
      missed: run.missed,
      ...(run.listingGuard && { listingGuard: run.message }),
    },
  };
}

/**
 * Closes a run exactly once: a single guarded statement that succeeds only while the run is
 * `running`, its listing is done and none of its postings is `pending`. Call it after the
 * caller's own posting update has COMMITTED — two workers whose uncommitted updates hid each
 * other would both see a pending posting and leave the run open. When two callers race, the
 * loser's UPDATE re-checks `status = 'running'` on the row the winner wrote and matches nothing.
 *
 * In the same statement, a run that ended `succeeded` after listing the whole site (and listed
 * at least one posting) counts a miss for each of the site's postings it did not list, and
 * expires those missed by `policy.expireAfterMisses` listings in a row; unless the listing guard
 * holds it, which ends the run `partial` with the guard's reason as its message and raises the
 * site's `listing_drop` alert (or counts it again), which the site's next normal listing resolves.
 * The same statement raises and resolves the site's `error_rate`, `fields_missing` and
 * `http_errors` alerts (decision 0021), the last from `requests`, which it keeps on the run. Then
 * an adaptive site's interval follows the run's changes (decision 0022). A run of a
 * `use_llm_sync` site closes only once its sync is over; until then `awaitingSync` is told.
 * Returns the closed run, or undefined when this call did not close it.
 */
export async function finalizeRun(
  db: Database,
  id: string,
  policy: ExpiryPolicy = DEFAULT_EXPIRY_POLICY,
  {
    requests,
    awaitingSync,
    beforeClose,
  }: {
    /** The run's requests by answer, read only for a run that may close; null when unknown. */
    requests?: () => Promise<RunRequestCounts | null>;
    /**
     * What must be done to the run's postings before it closes, called once nothing of it is
     * pending (its pages read again with its site's template, decision 0028). A racing caller
     * may call it too; the close that follows checks everything again.
     */
    beforeClose?: (run: { siteId: string }) => Promise<void>;
    /**
     * Told when the run would close but for its LLM sync (a `use_llm_sync` site, decision
     * 0025): its sync job is to be queued, and the run closes once it is done.
     */
    awaitingSync?: (runId: string) => Promise<void>;
  } = {},
): Promise<FinalizedRun | undefined> {
  // Run after every settled batch, and almost always with postings still pending: a small
  // statement answers that, so that the closing one, whose plan costs about 0.3 ms each time
  // Postgres makes it, runs only for a run that may close. That one checks everything again.
  const closable = await db.$client.query<{
    awaiting_sync: boolean | null;
    site_schedule_id: string;
  }>({
    name: 'gleaner-run-closable',
    text: RUN_CLOSABLE,
    values: [id],
  });
  const open = closable.rows[0];
  if (!open) return undefined;
  if (open.awaiting_sync) {
    await awaitingSync?.(id);
    return undefined;
  }
  await beforeClose?.({ siteId: open.site_schedule_id });
  const counted = (await requests?.()) ?? null;
  const result = await db.$client.query<{
    id: string;
    held: boolean;
    adapts: boolean;
    expired: number;
    missed: number;
  }>({
    name: 'gleaner-finalize-run',
    text: FINALIZE_RUN,
    values: [
      id,
      policy.expireAfterMisses,
      policy.listingDropGuard,
      policy.errorRateRise,
      policy.fieldsMissingRise,
      counted?.requests ?? null,
      counted?.clientErrors ?? null,
      counted?.serverErrors ?? null,
      counted?.rateLimited ?? null,
      counted?.unanswered ?? null,
      policy.httpErrorsRise,
    ],
  });
  const row = result.rows[0];
  if (!row) return undefined;
  if (row.adapts) await adaptSiteCadence(db, id);
  const run = await getRun(db, id);
  if (!run) return undefined;
  const expired = Number(row.expired);
  return { ...run, expired, missed: Number(row.missed) - expired, listingGuard: row.held };
}

/**
 * What a cancel does to the run's postings still `pending`, in the transaction that cancels it
 * ($1 the run, $2 the error text). Nothing will work on them any more, and none may stay
 * `pending` (that reads as "in progress" forever):
 * - a posting extracted before (`extracted_at` set) goes back to `ready` with the fields it had:
 *   its site listed it again, and its last extraction is still its best record. It must not
 *   turn `error`, which would make good data look broken.
 * - a posting never extracted becomes `error` with the reason, so it shows as not done, not as
 *   a failure of its page; the site's next run lists it again and crawls it.
 * Nothing is expired or missed: only a run that finalizes `succeeded` does that (`finalizeRun`).
 */
const SETTLE_CANCELLED_POSTINGS = `
  UPDATE postings
  SET status = CASE WHEN extracted_at IS NULL THEN 'error' ELSE 'ready' END,
      error = CASE WHEN extracted_at IS NULL THEN $2 ELSE NULL END,
      updated_at = now()
  WHERE run_id = $1 AND status = 'pending'
  RETURNING status`;

/** The error text of a posting whose run was cancelled before it was crawled. */
export const CANCELLED_POSTING_ERROR = 'run cancelled before this posting was crawled';

/** Postgres' deadlock_detected: one of two transactions locking rows in opposite order is aborted. */
const DEADLOCK_DETECTED = '40P01';

export interface CancelledRun {
  run: RunRow;
  /** Postings that were still pending: back to `ready` (extracted before), or `error`. */
  restored: number;
  unfinished: number;
}

/**
 * The run's counters from its postings, as `finalizeRun` counts them, less postings its ending
 * settled that the counters should not show ($3 turned `ready`, $4 turned `error`).
 */
const END_RUN = `
  UPDATE scrape_runs r
  SET (status, message, ready_count, skipped_count, errors_count, completed_pages,
       finished_at, updated_at) = (
    SELECT $5, $2, t.ready, t.skipped, t.errors, t.ready + t.skipped, now(), now()
    FROM (
      SELECT count(*) FILTER (WHERE p.status = 'ready') - $3 AS ready,
             count(*) FILTER (WHERE p.status = 'skipped') AS skipped,
             count(*) FILTER (WHERE p.status = 'error') - $4 AS errors
      FROM postings p WHERE p.run_id = r.id
    ) t)
  WHERE r.id = $1
  RETURNING r.id`;

/**
 * Ends an active run other than by finalizing it (a cancel, a deadline): in one transaction,
 * locks the run (a worker finalizing it at the same moment waits, then finds it no longer
 * running; a second ending finds it no longer active), lets `settle` move its pending postings
 * on, and writes the terminal status with `settle`'s message and counters. A settle batch locks
 * its postings in its own order; when it and this transaction lock two of the same postings in
 * opposite orders, Postgres aborts one of them: the ending is tried again (3 times). Undefined
 * when the run was not active.
 */
async function endActiveRun<T>(
  db: Database,
  id: string,
  status: 'cancelled' | 'failed',
  settle: (client: pg.PoolClient) => Promise<T & { message: string; uncounted?: [number, number] }>,
): Promise<{ run: RunRow; settled: T } | undefined> {
  for (let attempt = 1; ; attempt += 1) {
    const client = await db.$client.connect();
    try {
      await client.query('BEGIN');
      const locked = await client.query(
        `SELECT 1 FROM scrape_runs WHERE id = $1 AND status IN ('queued', 'running') FOR UPDATE`,
        [id],
      );
      if (locked.rowCount === 0) {
        await client.query('ROLLBACK');
        return undefined;
      }
      const settled = await settle(client);
      const [ready, errors] = settled.uncounted ?? [0, 0];
      await client.query(END_RUN, [
        id,
        withoutNul(settled.message).slice(0, 2000),
        ready,
        errors,
        status,
      ]);
      await client.query('COMMIT');
      const run = await getRun(db, id);
      return run && { run, settled };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      const code = (error as { code?: unknown }).code;
      if (code !== DEADLOCK_DETECTED || attempt >= 3) throw error;
    } finally {
      client.release();
    }
  }
}

/**
 * Cancels a queued or running run: its one terminal transition, `cancelled` with `finished_at`
 * and `message` (`reason`, and what happened to its pending postings), in one transaction that
 * also settles those postings (`SETTLE_CANCELLED_POSTINGS`). Guarded like `finalizeRun`: only an
 * active run is cancelled, and `finalizeRun` closes only `running` ones, so a run is never both
 * cancelled and finalized. Returns undefined when the run was not active (already ended, or no
 * such run).
 *
 * A settle batch locks its postings in its own order; when it and the cancel lock two of the
 * same postings in opposite orders, Postgres aborts one of them: the cancel is tried again.
 */
export async function cancelRun(
  db: Database,
  id: string,
  reason = 'cancelled',
): Promise<CancelledRun | undefined> {
  const ended = await endActiveRun(db, id, 'cancelled', async (client) => {
    const { rows: settled } = await client.query<{ status: 'ready' | 'error' }>(
      SETTLE_CANCELLED_POSTINGS,
      [id, CANCELLED_POSTING_ERROR],
    );
    const restored = settled.filter((row) => row.status === 'ready').length;
    const unfinished = settled.length - restored;
    return {
      restored,
      unfinished,
      message:
        settled.length === 0
          ? reason
          : `${reason}; ${settled.length} postings were still pending (${restored} kept their last extraction, ${unfinished} were never extracted)`,
      // The counters are what the run itself settled before the cancel.
      uncounted: [restored, unfinished] as [number, number],
    };
  });
  return (
    ended && {
      run: ended.run,
      restored: ended.settled.restored,
      unfinished: ended.settled.unfinished,
    }
  );
}

/**
 * Fails an active run that outlived its deadline, with `message`, and settles its postings still
 * pending as `error` (nothing will work on them: their run is over), through the same ending as
 * a cancel. Returns how many pending postings it settled, or undefined when the run was no
 * longer active.
 */
export async function failRunPastDeadline(
  db: Database,
  id: string,
  message: string,
): Promise<{ pendingSettled: number } | undefined> {
  const ended = await endActiveRun(db, id, 'failed', async (client) => {
    const settled = await client.query(
      `UPDATE postings SET status = 'error', error = $2, updated_at = now()
       WHERE run_id = $1 AND status = 'pending'`,
      [id, withoutNul(message).slice(0, 2000)],
    );
    return { pendingSettled: settled.rowCount ?? 0, message };
  });
  return ended && { pendingSettled: ended.settled.pendingSettled };
}

/**
 * For the job that lists a run, after it wrote postings: the run's status, read under a share
 * lock so that a cancel under way commits first. When the run was cancelled, the postings this
 * job wrote after the cancel settled the others are settled by the same rule: without this, a
 * listing slice upserted while the cancel ran would stay `pending` for good. Undefined when the
 * run no longer exists.
 */
export async function settleIfCancelled(
  db: Database,
  id: string,
): Promise<RunRow['status'] | undefined> {
  const { rows } = await db.$client.query<{ status: RunRow['status'] }>(
    'SELECT status FROM scrape_runs WHERE id = $1 FOR SHARE',
    [id],
  );
  const status = rows[0]?.status;
  if (status === 'cancelled')
    await db.$client.query(SETTLE_CANCELLED_POSTINGS, [id, CANCELLED_POSTING_ERROR]);
  return status;
}

/** A run with its counters as of now, and its postings counted by status. */
export type RunWithProgress = RunRow & {
  pendingCount: number;
  postingCounts: Record<PostingStatus, number>;
};

/**
 * Runs with live counters: a run's stored counters are written when it ends, so for a queued
 * or running run they are read from its postings now (`postings_run_status_idx`: an index-only
 * count), and `requested_pages` is what its listing has written so far. Every run also gets how
 * many of its postings are still pending.
 */
export async function withProgress(db: Database, runs: RunRow[]): Promise<RunWithProgress[]> {
  if (runs.length === 0) return [];
  const { rows } = await db.$client.query<RunCounts & { run_id: string }>({
    name: 'gleaner-run-progress',
    text: `
      SELECT run_id, count(*)::int AS total,
             count(*) FILTER (WHERE status = 'ready')::int AS ready,
             count(*) FILTER (WHERE status = 'skipped')::int AS skipped,
             count(*) FILTER (WHERE status = 'error')::int AS errors,
             count(*) FILTER (WHERE status = 'pending')::int AS pending,
             count(*) FILTER (WHERE status = 'expired')::int AS expired
      FROM postings WHERE run_id = ANY($1::uuid[]) GROUP BY run_id`,
    values: [runs.map((run) => run.id)],
  });
  const counts = new Map(rows.map((row) => [row.run_id, row]));
  return runs.map((run) => progressOf(run, counts.get(run.id)));
}

interface RunCounts {
  total: number;
  ready: number;
  skipped: number;
  errors: number;
  pending: number;
  expired: number;
}

function progressOf(run: RunRow, now: RunCounts | undefined): RunWithProgress {
  const pendingCount = now?.pending ?? 0;
  const postingCounts = {
    pending: pendingCount,
    ready: now?.ready ?? 0,
    skipped: now?.skipped ?? 0,
    error: now?.errors ?? 0,
    expired: now?.expired ?? 0,
  };
  if (run.status !== 'queued' && run.status !== 'running')
    return { ...run, pendingCount, postingCounts };
  return {
    ...run,
    pendingCount,
    postingCounts,
    requestedPages: Math.max(run.requestedPages, now?.total ?? 0),
    readyCount: now?.ready ?? 0,
    skippedCount: now?.skipped ?? 0,
    errorsCount: now?.errors ?? 0,
    completedPages: (now?.ready ?? 0) + (now?.skipped ?? 0),
  };
}

/**
 * The status statement, prepared by name on each connection that runs it: planning its join and
 * count costs Postgres about a millisecond, ten times its execution, and a watched run is asked
 * for every half second by each watcher.
 */
const runStatusStatement = preparedFor((db) =>
  db
    .select({
      run: scrapeRuns,
      siteName: siteSchedules.siteName,
      tenantId: siteSchedules.tenantId,
      counts: sql<RunCounts>`(
        SELECT json_build_object(
          'total', count(*),
          'ready', count(*) FILTER (WHERE p.status = 'ready'),
          'skipped', count(*) FILTER (WHERE p.status = 'skipped'),
          'errors', count(*) FILTER (WHERE p.status = 'error'),
          'pending', count(*) FILTER (WHERE p.status = 'pending'),
          'expired', count(*) FILTER (WHERE p.status = 'expired'))
        FROM postings p WHERE p.run_id = ${scrapeRuns.id})`,
    })
    .from(scrapeRuns)
    .leftJoin(siteSchedules, eq(siteSchedules.id, scrapeRuns.siteScheduleId))
    .where(eq(scrapeRuns.runId, sql.placeholder('publicId')))
    .limit(1)
    .prepare('gleaner-run-status'),
);

/**
 * A run by its public id with its live progress and its site's name and tenant, in one statement
 * (the status route, polled by every watcher of a run).
 */
export async function getRunStatus(
  db: Database,
  publicId: string,
): Promise<
  | { run: RunWithProgress; site: { siteName: string; tenantId: string | null } | undefined }
  | undefined
> {
  const [row] = await runStatusStatement(db).execute({ publicId });
  if (!row) return undefined;
  return {
    run: progressOf(row.run, row.counts),
    site: row.siteName === null ? undefined : { siteName: row.siteName, tenantId: row.tenantId },
  };
}
