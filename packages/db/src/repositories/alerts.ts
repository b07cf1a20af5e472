import { and, desc, eq, isNotNull, isNull } from 'drizzle-orm';
import type { Database } from '../client.js';
import { EFFECTIVE_INTERVAL } from './schedules.js';
import { scrapeRuns, siteAlerts, siteSchedules, type SiteAlertKind } from '../schema.js';

export type SiteAlertState = 'open' | 'resolved' | 'all';

/** An alert with the names the API shows: its site's and its runs' public ids. */
export interface SiteAlert {
  id: string;
  siteId: string;
  siteName: string;
  kind: SiteAlertKind;
  message: string;
  details: Record<string, unknown>;
  occurrences: number;
  /** The run that raised it last (`manual_…`, `sched_…`), while that run is kept. */
  runId: string | null;
  raisedAt: Date;
  lastSeenAt: Date;
  resolvedAt: Date | null;
}

/**
 * Sites' alerts, the most recently seen first (decision 0019): open ones by default, one site's
 * when `siteId` is given.
 */
export async function listSiteAlerts(
  db: Database,
  {
    state = 'open',
    siteId,
    limit = 100,
  }: { state?: SiteAlertState; siteId?: string; limit?: number },
): Promise<SiteAlert[]> {
  const rows = await db
    .select({
      alert: siteAlerts,
      siteName: siteSchedules.siteName,
      runId: scrapeRuns.runId,
    })
    .from(siteAlerts)
    .innerJoin(siteSchedules, eq(siteSchedules.id, siteAlerts.siteId))
    .leftJoin(scrapeRuns, eq(scrapeRuns.id, siteAlerts.runId))
    .where(
      and(
        state === 'open'
          ? isNull(siteAlerts.resolvedAt)
          : state === 'resolved'
            ? isNotNull(siteAlerts.resolvedAt)
            : undefined,
        siteId === undefined ? undefined : eq(siteAlerts.siteId, siteId),
      ),
    )
    .orderBy(desc(siteAlerts.lastSeenAt), desc(siteAlerts.id))
    .limit(limit);
  return rows.map(({ alert, siteName, runId }) => ({
    id: alert.id,
    siteId: alert.siteId,
    siteName,
    kind: alert.kind,
    message: alert.message,
    details: alert.details,
    occurrences: alert.occurrences,
    runId,
    raisedAt: alert.raisedAt,
    lastSeenAt: alert.lastSeenAt,
    resolvedAt: alert.resolvedAt,
  }));
}

/**
 * Raises an `overdue` alert for every enabled site of which no run has finished (`succeeded`,
 * `partial` or `failed`) for `intervals` of its intervals (an adaptive site's: the one its change
 * rate chose), counted from its registration when
 * none ever did; refreshes those open already, and resolves the open ones of sites that are no
 * longer overdue (a run of theirs finished, they were disabled, or their interval grew). One
 * statement: replicas that run it at once agree. A run that closes resolves its site's too.
 */
const WATCH_OVERDUE_SITES = `
  WITH overdue AS (
    SELECT s.id, ${EFFECTIVE_INTERVAL} AS interval_minutes, last.finished_at,
           floor(extract(epoch FROM now() - coalesce(last.finished_at, s.created_at)) / 60)::int
             AS quiet_minutes
    FROM site_schedules s
    LEFT JOIN LATERAL (
      SELECT r.finished_at FROM scrape_runs r
      WHERE r.site_schedule_id = s.id AND r.status IN ('succeeded', 'partial', 'failed')
      ORDER BY r.created_at DESC LIMIT 1
    ) last ON true
    WHERE s.enabled
      AND coalesce(last.finished_at, s.created_at)
          < now() - make_interval(mins => ${EFFECTIVE_INTERVAL} * $1::int)
  ), raised AS (
    INSERT INTO site_alerts (site_id, kind, message, details)
    SELECT o.id, 'overdue',
           CASE WHEN o.finished_at IS NULL
             THEN format('overdue: no run of the site has finished since it was registered %s minutes ago, %s of its %s-minute intervals',
                         o.quiet_minutes, round(o.quiet_minutes::numeric / o.interval_minutes, 1), o.interval_minutes)
             ELSE format('overdue: the site''s last run finished %s minutes ago, %s of its %s-minute intervals',
                         o.quiet_minutes, round(o.quiet_minutes::numeric / o.interval_minutes, 1), o.interval_minutes)
           END,
           jsonb_build_object('last_finished_at', o.finished_at, 'quiet_minutes', o.quiet_minutes,
                              'interval_minutes', o.interval_minutes, 'overdue_intervals', $1::int)
    FROM overdue o
    ON CONFLICT (site_id, kind) WHERE resolved_at IS NULL DO UPDATE
    SET message = excluded.message, details = excluded.details, last_seen_at = now()
    RETURNING (xmax = 0) AS inserted
  ), resolved AS (
    UPDATE site_alerts a SET resolved_at = now()
    WHERE a.kind = 'overdue' AND a.resolved_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM overdue o WHERE o.id = a.site_id)
    RETURNING a.id
  )
  SELECT (SELECT count(*) FROM raised WHERE inserted)::int AS raised,
         (SELECT count(*) FROM raised)::int AS open,
         (SELECT count(*) FROM resolved)::int AS resolved`;

/** What one look of the site watch did: alerts it raised, the overdue sites, alerts it resolved. */
export interface OverdueWatch {
  raised: number;
  open: number;
  resolved: number;
}

export async function watchOverdueSites(db: Database, intervals: number): Promise<OverdueWatch> {
  const { rows } = await db.$client.query<OverdueWatch>(WATCH_OVERDUE_SITES, [intervals]);
  return rows[0] ?? { raised: 0, open: 0, resolved: 0 };
}
