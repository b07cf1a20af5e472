import { nextChangeRate, siteCadence, type CadenceChoice } from '../cadence.js';
import type { Database } from '../client.js';

/**
 * What a closed run tells its site's cadence: the site's settings, the changes the run found
 * (postings read anew, that is new or changed, and postings it expired) and when the site's
 * previous closed run started.
 */
const CADENCE_OBSERVATION = `
  SELECT s.id AS site_id, s.adaptive, s.interval_minutes, s.min_interval_minutes,
         s.max_interval_minutes, s.change_rate_per_hour, r.status, r.started_at,
         r.ready_count + r.expired_count AS changes,
         (SELECT p.started_at FROM scrape_runs p
          WHERE p.site_schedule_id = r.site_schedule_id AND p.id <> r.id
            AND p.status IN ('succeeded', 'partial', 'failed') AND p.started_at < r.started_at
          ORDER BY p.created_at DESC LIMIT 1) AS previous_started_at
  FROM scrape_runs r JOIN site_schedules s ON s.id = r.site_schedule_id
  WHERE r.id = $1`;

/**
 * The site's new rate and interval; its next run comes one new interval after this run started
 * (at once, when that is past). Only while the site is still adaptive.
 */
const ADAPT_CADENCE = `
  UPDATE site_schedules
  SET change_rate_per_hour = $2, adaptive_interval_minutes = $3,
      next_run_at = date_trunc('milliseconds', $4::timestamptz + make_interval(mins => $3::int)),
      updated_at = now()
  WHERE id = $1 AND adaptive`;

/**
 * After a run closed `succeeded`, moves an adaptive site's interval with the change rate its
 * runs show (decision 0022). A site's first run (every posting new) and a run that did not
 * succeed (a board answering errors or short is not a board that stopped changing) leave it as
 * it is. Returns the choice, or undefined when nothing moved.
 */
export async function adaptSiteCadence(
  db: Database,
  runId: string,
): Promise<CadenceChoice | undefined> {
  const { rows } = await db.$client.query<{
    site_id: string;
    adaptive: boolean;
    interval_minutes: number;
    min_interval_minutes: number | null;
    max_interval_minutes: number | null;
    change_rate_per_hour: number | null;
    status: string;
    started_at: Date | null;
    changes: number;
    previous_started_at: Date | null;
  }>({ name: 'gleaner-cadence-observation', text: CADENCE_OBSERVATION, values: [runId] });
  const row = rows[0];
  if (!row?.adaptive || row.status !== 'succeeded') return undefined;
  if (row.started_at === null || row.previous_started_at === null) return undefined;
  const hours = (row.started_at.getTime() - row.previous_started_at.getTime()) / 3_600_000;
  const rate = nextChangeRate(row.change_rate_per_hour, Number(row.changes), hours);
  const choice = siteCadence({
    intervalMinutes: row.interval_minutes,
    minIntervalMinutes: row.min_interval_minutes,
    maxIntervalMinutes: row.max_interval_minutes,
    changeRatePerHour: rate,
  });
  await db.$client.query(ADAPT_CADENCE, [row.site_id, rate, choice.minutes, row.started_at]);
  return choice;
}
