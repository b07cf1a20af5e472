import { siteCadence, type CadenceBounds, type CadenceChoice } from '../cadence.js';
import type { Database } from '../client.js';

/**
 * What the scheduler reads and writes of `site_schedules`. A pass costs what is due, not what is
 * registered: every query here walks `site_schedules_due_idx` (`next_run_at` of enabled sites).
 */

/** A site whose next run time has come. */
export interface DueSite {
  id: string;
  siteName: string;
  /** The slot: the `next_run_at` that made the site due. */
  nextRunAt: Date;
  /** The interval its next run is scheduled by: the adaptive one, for an adaptive site. */
  intervalMinutes: number;
  /** An adaptive site's cadence (decision 0022): what chose `intervalMinutes`, and why. */
  cadence: (CadenceChoice & { changeRatePerHour: number | null; bounds: CadenceBounds }) | null;
}

/**
 * The interval a site's next run is scheduled by, over `site_schedules s`: its adaptive interval
 * while it is adaptive (chosen when it was registered or changed, then after each run),
 * otherwise its own.
 */
export const EFFECTIVE_INTERVAL = `CASE WHEN s.adaptive THEN coalesce(s.adaptive_interval_minutes, s.interval_minutes) ELSE s.interval_minutes END`;

const SITE_COLUMNS = `s.id, s.site_name, s.next_run_at, s.interval_minutes, s.adaptive,
  s.min_interval_minutes, s.max_interval_minutes, s.change_rate_per_hour,
  s.adaptive_interval_minutes`;

interface DueSiteRow {
  id: string;
  site_name: string;
  next_run_at: Date;
  interval_minutes: number;
  adaptive: boolean;
  min_interval_minutes: number | null;
  max_interval_minutes: number | null;
  change_rate_per_hour: number | null;
  adaptive_interval_minutes: number | null;
}

function toDueSite(row: DueSiteRow): DueSite {
  const site = { id: row.id, siteName: row.site_name, nextRunAt: row.next_run_at };
  if (!row.adaptive) return { ...site, intervalMinutes: row.interval_minutes, cadence: null };
  const cadence = siteCadence({
    intervalMinutes: row.interval_minutes,
    minIntervalMinutes: row.min_interval_minutes,
    maxIntervalMinutes: row.max_interval_minutes,
    changeRatePerHour: row.change_rate_per_hour,
  });
  return {
    ...site,
    // The stored choice is what the scheduler uses; it is the same function's over the same
    // inputs (the API chooses again when the base or the bounds change).
    intervalMinutes: row.adaptive_interval_minutes ?? row.interval_minutes,
    cadence: { ...cadence, changeRatePerHour: row.change_rate_per_hour },
  };
}

/** Enabled sites due now, longest overdue first. */
export async function listDueSites(db: Database, limit: number): Promise<DueSite[]> {
  const { rows } = await db.$client.query<DueSiteRow>({
    name: 'gleaner-due-sites',
    text: `
      SELECT ${SITE_COLUMNS} FROM site_schedules s
      WHERE s.enabled AND s.next_run_at <= now()
      ORDER BY s.next_run_at LIMIT $1`,
    values: [limit],
  });
  return rows.map(toDueSite);
}

/** Enabled sites not yet due, soonest first. */
export async function listUpcomingSites(db: Database, limit: number): Promise<DueSite[]> {
  const { rows } = await db.$client.query<DueSiteRow>({
    text: `
      SELECT ${SITE_COLUMNS} FROM site_schedules s
      WHERE s.enabled AND s.next_run_at > now()
      ORDER BY s.next_run_at LIMIT $1`,
    values: [limit],
  });
  return rows.map(toDueSite);
}

/** How many enabled sites are due now. */
export async function countDueSites(db: Database): Promise<number> {
  const { rows } = await db.$client.query<{ due: number }>(
    `SELECT count(*)::int AS due FROM site_schedules WHERE enabled AND next_run_at <= now()`,
  );
  return rows[0]?.due ?? 0;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One site's schedule by id or name, whether due or not (a pass forced for one site). */
export async function findScheduledSite(
  db: Database,
  site: string,
): Promise<(DueSite & { enabled: boolean }) | undefined> {
  const { rows } = await db.$client.query<DueSiteRow & { enabled: boolean }>({
    text: `
      SELECT ${SITE_COLUMNS}, coalesce(s.next_run_at, now()) AS next_run_at, s.enabled
      FROM site_schedules s
      WHERE s.site_name = $1 OR s.id = $2::uuid`,
    values: [site, UUID.test(site) ? site : null],
  });
  const row = rows[0];
  return row && { ...toDueSite(row), enabled: row.enabled };
}

/** One due site the scheduler holds the lock for, with the ids its run would get. */
export interface SlotClaim {
  siteId: string;
  /** The `next_run_at` the scheduler saw: the claim holds only while it is still the same. */
  slot: Date;
  /** The run's row id and public id, and its scrape job id (`task_id`). */
  id: string;
  runId: string;
  taskId: string;
  /** The next run comes `interval × intervalFactor` from now (the jitter, 0.9–1.1). */
  intervalFactor: number;
  correlationId: string;
}

/** What became of a claim. */
export type SlotOutcome =
  /** A `queued` run with `trigger='schedule'` was created; its scrape job is still to add. */
  | 'started'
  /** The site already has a queued or running run: this slot is skipped. */
  | 'active-run'
  /** Another scheduler took the slot first (it moved `next_run_at`, or holds the row). */
  | 'taken';

/**
 * Starts scheduled runs for many claimed slots in one statement, each only while the site is
 * still enabled and its `next_run_at` is still the slot the caller saw (a compare-and-set, with
 * `SKIP LOCKED` so replicas never wait on each other's rows). For each claimed site it inserts
 * the run (`ON CONFLICT DO NOTHING`: the one-active-run-per-site index turns a site whose run
 * is still active into a skip, and the `(site, scheduled_for)` index makes a second run for the
 * same slot impossible whatever the callers do) and moves `next_run_at` on by the jittered
 * interval; `last_run_at` moves only for sites that got a run. Run and schedule change in one
 * commit: a slot is never both spent and unstarted.
 */
export async function startScheduledSlots(
  db: Database,
  claims: readonly SlotClaim[],
): Promise<Map<string, SlotOutcome>> {
  const outcomes = new Map<string, SlotOutcome>(claims.map((c) => [c.siteId, 'taken']));
  if (claims.length === 0) return outcomes;
  const { rows } = await db.$client.query<{ id: string; started: boolean }>({
    name: 'gleaner-start-scheduled-slots',
    text: `
      WITH input AS (
        SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::uuid[], $4::text[], $5::text[],
                             $6::float8[], $7::text[])
          AS i(site_id, slot, id, run_id, task_id, factor, correlation_id)
      ), claimed AS (
        SELECT s.id, ${EFFECTIVE_INTERVAL} AS interval_minutes, i.slot, i.id AS run_uuid,
               i.run_id, i.task_id, i.factor, i.correlation_id, s.use_llm_sync
        FROM site_schedules s JOIN input i ON i.site_id = s.id
        -- The slot came back from JavaScript at millisecond precision.
        WHERE s.enabled AND date_trunc('milliseconds', s.next_run_at) = i.slot
        FOR UPDATE OF s SKIP LOCKED
      ), started AS (
        INSERT INTO scrape_runs (id, run_id, site_schedule_id, task_id, trigger, scheduled_for,
                                 correlation_id, sync_state)
        SELECT run_uuid, run_id, id, task_id, 'schedule', slot, correlation_id,
               CASE WHEN use_llm_sync THEN 'pending' END
        FROM claimed
        ON CONFLICT DO NOTHING
        RETURNING site_schedule_id
      ), started_ids AS (
        -- One array rather than a join on the CTE: the planner cannot estimate a CTE's rows and
        -- chose a nested loop, 1,000,000 comparisons for 1,000 sites.
        SELECT coalesce(array_agg(site_schedule_id), '{}') AS ids FROM started
      ), advanced AS (
        UPDATE site_schedules s
        SET next_run_at = date_trunc('milliseconds',
              now() + make_interval(secs => c.interval_minutes * 60 * c.factor)),
            last_run_at = CASE WHEN s.id = ANY(st.ids) THEN now() ELSE s.last_run_at END,
            updated_at = now()
        FROM claimed c, started_ids st
        WHERE s.id = c.id
        RETURNING s.id, s.id = ANY(st.ids) AS started
      )
      SELECT id, started FROM advanced`,
    values: [
      claims.map((c) => c.siteId),
      claims.map((c) => c.slot),
      claims.map((c) => c.id),
      claims.map((c) => c.runId),
      claims.map((c) => c.taskId),
      claims.map((c) => c.intervalFactor),
      claims.map((c) => c.correlationId),
    ],
  });
  for (const row of rows) outcomes.set(row.id, row.started ? 'started' : 'active-run');
  return outcomes;
}
